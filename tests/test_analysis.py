"""The analyses' logic (deployments/analysis/) over a scripted fake backend: schema validation and its one
retry, role mapping with unknown, emotion parsing, fitting long transcripts, errors that pickle; and over a fake
that scores labels: emotions and roles chosen by probabilities, calibrated."""

import json
import math
import pickle

import pytest

from deployments.analysis import emotions, roles
from deployments.analysis._logprobs import log_softmax, shared_prefix
from deployments.analysis._transcript import fit
from deployments.analysis.analyzer import analyze
from deployments.analysis.backends import Completion, LabelScorer, Scores
from deployments.analysis.errors import AnalysisTimeout, AudioEmotionsUnavailable, LLMBackendError, LLMOutputInvalid
from deployments.config import AnalysisConfig
from deployments.types import (
    EMOTION_LABELS,
    AnalysisOptions,
    DiarizedSegment,
    DiarizedTranscript,
    Segment,
    SpeakerSummary,
    Transcript,
)
from tests.fakes import replica_class


class ScriptedBackend:
    """Answers with the next scripted text; records what it was asked."""

    context_tokens = 2048

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[list, dict | None, int]] = []

    def complete(self, messages, json_schema, max_tokens) -> Completion:
        self.asked.append((messages, json_schema, max_tokens))
        return Completion(self.answers.pop(0), input_tokens=100, output_tokens=10)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def close(self) -> None:
        pass


def diarized(*turns: tuple[str, str]) -> DiarizedTranscript:
    segments = [
        DiarizedSegment(id=i, start=i * 2.0, end=i * 2.0 + 1.5, text=text, speaker=speaker)
        for i, (speaker, text) in enumerate(turns)
    ]
    speakers = [SpeakerSummary(speaker=s, speaking_time=1.5) for s in dict.fromkeys(s for s, _ in turns)]
    return DiarizedTranscript(
        text=" ".join(t for _, t in turns), language="en", duration=10.0, speakers=speakers, segments=segments
    )


def plain(*texts: str) -> Transcript:
    segments = [
        Segment(
            id=i,
            seek=0,
            start=i,
            end=i + 1,
            text=t,
            tokens=[],
            temperature=0,
            avg_logprob=0,
            compression_ratio=1,
            no_speech_prob=0,
        )
        for i, t in enumerate(texts)
    ]
    return Transcript(language="en", duration=len(texts), segments=segments)


CALL = diarized(("speaker_0", "How can I help you?"), ("speaker_1", "My order arrived broken."))
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_prompt_returns_the_text_and_counts_tokens() -> None:
    backend = ScriptedBackend("A broken order.")
    result = analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(prompt="Summarize"))
    assert result.llm_output == "A broken order."
    assert (result.llm_input_tokens, result.llm_output_tokens) == (100, 10)
    assert "speaker_1: My order arrived broken." in backend.asked[0][0][-1]["content"]


def test_schema_answer_is_validated_and_an_invalid_one_retried_once() -> None:
    backend = ScriptedBackend('{"n": "two"}', '{"n": 2}')
    result = analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(prompt="Count", json_schema=SCHEMA))
    assert result.llm_output == {"n": 2}
    assert len(backend.asked) == 2 and "invalid" in backend.asked[1][0][-1]["content"]
    assert result.llm_input_tokens == 200  # both calls are billed


def test_schema_answer_invalid_twice_is_an_error() -> None:
    backend = ScriptedBackend("not json", '{"m": 1}')
    with pytest.raises(LLMOutputInvalid):
        analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(prompt="Count", json_schema=SCHEMA))


def test_roles_from_a_list_constrain_to_it_plus_unknown_and_map_strays_to_unknown() -> None:
    backend = ScriptedBackend(json.dumps({"speaker_0": "agent", "speaker_1": "customer"}))
    result = analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(roles=["agent", "customer"]))
    assert result.roles == {"speaker_0": "agent", "speaker_1": "customer"}
    schema = backend.asked[0][1]
    assert schema is not None
    assert schema["properties"]["speaker_0"]["enum"] == ["agent", "customer", "unknown"]
    assert roles.clean("manager", ["agent", "unknown"]) == "unknown"
    assert roles.clean("", None) == "unknown"


def test_roles_dict_passes_descriptions_and_auto_allows_free_labels() -> None:
    backend = ScriptedBackend(json.dumps({"speaker_0": "operator", "speaker_1": "unknown"}))
    options = AnalysisOptions(roles={"operator": "answers the phone", "client": "calls in"})
    assert analyze(backend, AnalysisConfig(), CALL, options).roles == {"speaker_0": "operator", "speaker_1": "unknown"}
    assert "answers the phone" in backend.asked[0][0][-1]["content"]
    backend = ScriptedBackend(json.dumps({"speaker_0": "оператор", "speaker_1": "клиент"}))
    result = analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(roles="auto"))
    assert result.roles == {"speaker_0": "оператор", "speaker_1": "клиент"}
    assert backend.asked[0][1] is not None
    assert "enum" not in backend.asked[0][1]["properties"]["speaker_0"]


def test_roles_need_speakers_and_invalid_answers_give_unknown() -> None:
    backend = ScriptedBackend("[]", "{}")
    result = analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(roles=["a", "b"]))
    assert result.roles == {"speaker_0": "unknown", "speaker_1": "unknown"}
    assert analyze(ScriptedBackend(), AnalysisConfig(), plain("hi"), AnalysisOptions(roles="auto")).roles == {}


def test_emotions_are_parsed_per_segment_in_batches() -> None:
    answers = [
        json.dumps([{"label": "angry", "confidence": 90}, {"label": "neutral", "confidence": 60}]),
        json.dumps([{"label": "positive", "confidence": 10}]),
    ]
    backend = ScriptedBackend(*answers)
    transcript = plain("I hate this!", "meh", "Thanks a lot!")
    result = analyze(backend, AnalysisConfig(emotion_batch=2), transcript, AnalysisOptions(emotions=True))
    assert len(backend.asked) == 2
    first, second, third = result.emotions
    assert first is not None and second is not None and third is not None
    assert first.label == "angry" and first.confidence == 0.9
    assert set(first.probs) == set(EMOTION_LABELS) and sum(first.probs.values()) == pytest.approx(1, abs=1e-3)
    assert second.label == "neutral"
    assert third.label == "positive" and third.confidence == emotions.MIN_CONFIDENCE
    assert third.probs["positive"] >= max(third.probs.values())


class ScoringBackend(ScriptedBackend):
    """Scores a continuation by `rule(messages' last content, system content, continuation)`; counts tokens."""

    def __init__(self, rule) -> None:
        super().__init__()
        self.rule = rule
        self.scored: list[tuple[list, list[str]]] = []

    def score(self, messages, continuations) -> Scores:
        self.scored.append((messages, continuations))
        logprobs = [self.rule(messages[-1]["content"], messages[0]["content"], text) for text in continuations]
        return Scores(logprobs, input_tokens=7)


def test_emotions_by_scores_are_a_calibrated_softmax_over_the_labels() -> None:
    """The fake leans to "angry" whatever the input (as tiny models do) and adds a little for a label's cue
    word: raw, everything would be angry; against the "N/A" baseline, each cue wins and a cue-less one ties."""
    cues = {"hate": "angry", "miss": "sad", "thanks": "positive"}

    def rule(user: str, system: str, label: str) -> float:
        bias = -1.0 if label == "angry" else -3.0
        return bias + sum(1.5 for cue, cued in cues.items() if cue in user.lower() and cued == label)

    backend = ScoringBackend(rule)
    assert isinstance(backend, LabelScorer)
    transcript = plain("I hate waiting", "I miss you", "Thanks a lot")
    result = analyze(backend, AnalysisConfig(), transcript, AnalysisOptions(emotions=True))
    judged = [e for e in result.emotions if e is not None]
    assert len(judged) == len(result.emotions)  # scores give every segment an emotion
    assert [e.label for e in judged] == ["angry", "sad", "positive"]
    for emotion in judged:
        assert set(emotion.probs) == set(EMOTION_LABELS) and sum(emotion.probs.values()) == pytest.approx(1, abs=1e-3)
        assert emotion.confidence == emotion.probs[emotion.label] == max(emotion.probs.values())
    assert judged[1].probs["sad"] == pytest.approx(math.exp(1.5) / (math.exp(1.5) + 3), abs=1e-3)
    assert backend.asked == []  # nothing generated
    assert '"N/A"' in backend.scored[0][0][-1]["content"] and len(backend.scored) == 4
    assert (result.llm_input_tokens, result.llm_output_tokens) == (28, 0)  # scoring is billed as input
    assert analyze(backend, AnalysisConfig(), plain(), AnalysisOptions(emotions=True)).emotions == []


def test_roles_by_scores_pick_the_role_that_best_explains_each_speakers_words() -> None:
    """The likelihood of a speaker's words under "You are a <role>": a word of the role in what they said
    raises it; a speaker that no listed role explains better than a plain "person" is unknown."""

    def rule(user: str, system: str, words: str) -> float:
        role = system.removeprefix("You are a ").removeprefix("n ").split(" in a conversation")[0].split(" (")[0]
        return -10.0 + (2.0 if role.split()[-1] in words else 0.0) + (1.0 if role == "person" else 0.0)

    call = diarized(
        ("speaker_0", "This is the agent speaking, how can I help?"),
        ("speaker_1", "As a customer I want a refund."),
        ("speaker_2", "Hello."),
        ("speaker_0", "Of course."),
    )
    backend = ScoringBackend(rule)
    result = analyze(backend, AnalysisConfig(), call, AnalysisOptions(roles=["support agent", "customer"]))
    assert result.roles == {"speaker_0": "support agent", "speaker_1": "customer", "speaker_2": "unknown"}
    assert backend.asked == [] and len(backend.scored) == 9  # 3 speakers x (2 roles + "person")
    assert backend.scored[0][1] == ["This is the agent speaking, how can I help?\nOf course."]
    described = AnalysisOptions(roles={"operator": "answers the phone", "client": "calls in"})
    backend = ScoringBackend(rule)
    analyze(backend, AnalysisConfig(), call, described)
    assert backend.scored[0][0][0]["content"] == "You are an operator (answers the phone) in a conversation."
    only_unknown = analyze(ScoringBackend(rule), AnalysisConfig(), call, AnalysisOptions(roles=["unknown"]))
    assert set(only_unknown.roles.values()) == {"unknown"}
    auto = ScoringBackend(rule)
    auto.answers = [json.dumps({"speaker_0": "a", "speaker_1": "b", "speaker_2": "c"})]
    assert analyze(auto, AnalysisConfig(), call, AnalysisOptions(roles="auto")).roles["speaker_2"] == "c"
    assert auto.scored == []  # "auto" still generates


def test_scoring_helpers() -> None:
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and shared_prefix([], [1]) == 0
    logprobs = log_softmax([1.0, 2.0, 3.0])
    assert sum(math.exp(value) for value in logprobs) == pytest.approx(1)
    assert not isinstance(ScriptedBackend(), LabelScorer)


def test_emotion_items_outside_the_four_labels_are_none() -> None:
    parsed = emotions.parse([{"label": "bored", "confidence": 50}, {"label": "sad"}], 3)
    assert parsed[1] is not None
    assert parsed[0] is None and parsed[1].label == "sad" and parsed[2] is None


def test_long_transcripts_keep_both_ends_and_say_what_was_cut() -> None:
    lines = [f"line {i} " + "word " * 10 for i in range(100)]
    text = fit(lines, 120, lambda s: len(s.split()))
    assert text.startswith("line 0 ") and text.rstrip().endswith(lines[-1].rstrip())
    assert "lines omitted" in text and len(text.split()) <= 120
    assert fit(lines[:3], 1000, lambda s: len(s.split())) == "\n".join(lines[:3])


def test_timeout_stops_before_the_next_call() -> None:
    backend = ScriptedBackend("x")
    with pytest.raises(AnalysisTimeout):
        analyze(backend, AnalysisConfig(timeout_s=1e-9), CALL, AnalysisOptions(prompt="Summarize"))


def test_errors_survive_pickling() -> None:
    for error in (
        LLMBackendError("down"),
        LLMOutputInvalid("bad"),
        AnalysisTimeout("late"),
        AudioEmotionsUnavailable("x"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)


def test_a_requests_budget_is_the_shorter_of_its_own_and_the_configs() -> None:
    backend = ScriptedBackend("x")
    with pytest.raises(AnalysisTimeout):
        analyze(backend, AnalysisConfig(), CALL, AnalysisOptions(prompt="Summarize", timeout_s=1e-9))
    assert backend.asked == []


def test_a_synchronous_analysis_spends_its_budget_waiting_for_the_model_and_a_job_waits() -> None:
    """The Analyzer deployment's queue: one analysis at a time; a synchronous one gives up when its budget is
    spent in the queue (413), a job's waits its turn."""
    import asyncio

    from deployments.analysis.deployment import Analyzer

    analyzer = object.__new__(replica_class(Analyzer))
    analyzer.config, analyzer.backend = AnalysisConfig(), ScriptedBackend("first", "second")

    async def scenario() -> None:
        analyzer.lock = asyncio.Semaphore(1)  # what the replica makes for the embedded backend
        await analyzer.lock.acquire()  # another analysis holds the model
        with pytest.raises(AnalysisTimeout, match="waited its whole budget"):
            await analyzer.analyze(CALL, AnalysisOptions(prompt="Summarize", timeout_s=0.05))
        job = asyncio.ensure_future(analyzer.analyze(CALL, AnalysisOptions(prompt="Summarize")))
        await asyncio.sleep(0.1)
        assert not job.done()
        analyzer.lock.release()
        assert (await job).llm_output == "first"
        quick = await analyzer.analyze(CALL, AnalysisOptions(prompt="Summarize", timeout_s=5))
        assert quick.llm_output == "second"

    asyncio.run(scenario())


def test_an_analyzer_without_its_model_answers_each_analysis_with_a_backend_error() -> None:
    """The application still starts (transcription goes on); an analysis is a 502 naming the cause."""
    import asyncio

    from deployments.analysis.deployment import Analyzer

    analyzer = replica_class(Analyzer)(AnalysisConfig(model="/nonexistent/model.gguf"))
    with pytest.raises(LLMBackendError, match="analysis model not found"):
        asyncio.run(analyzer.analyze(CALL, AnalysisOptions(prompt="Summarize")))
