"""Tier 1: the vocabulary mechanisms without a model: term files and dictionaries, which terms go into
Whisper's prompt, and the correction after decoding (a misheard term fixed, a common word never touched,
idempotent, words and text alike)."""

import asyncio
from pathlib import Path

import numpy as np
import pytest

from deployments.config import VocabularyConfig
from deployments.errors import InputRejectedError
from deployments.types import BatchHints, ChunkOptions, ChunkTranscript, Segment, Transcript, Word
from deployments.vocabulary import Spelling, Vocabulary
from deployments.vocabulary.applied import AppliedVocabulary
from deployments.vocabulary.correction import Corrector, correct_chunk
from deployments.vocabulary.dictionaries import (
    check_dictionaries,
    dictionary_terms,
    lexicon,
    read_terms,
    unknown_dictionary,
)
from deployments.vocabulary.prompt import biasing_prompt, choose_terms, echoes, fits, reads_back, term_tokens
from tests import test_pipeline as pipeline_tests

CLINIC = Path(__file__).parent / "data" / "vocabulary" / "clinic.txt"
CONFIG = VocabularyConfig(dictionaries={"clinic": str(CLINIC)})
TERMS = ["Metformin", "lisinopril", "Nexara", "atorvastatin", "метформин", "Kubernetes"]
COMMON = " The patient went home to her family and said that everything was fine, next time we meet for dinner."


def test_a_term_file_skips_comments_and_blank_lines_and_repeats() -> None:
    assert read_terms(CLINIC) == ("Nexara", "Zolvadex extended", "Kardiolin")


def test_dictionaries_shipped_and_configured_and_unknown() -> None:
    assert unknown_dictionary("medical", CONFIG) is None and unknown_dictionary("clinic", CONFIG) is None
    assert unknown_dictionary(None, CONFIG) is None
    reason = unknown_dictionary("legal", CONFIG)
    assert reason is not None and "'legal'" in reason and "clinic, medical" in reason
    medical = dictionary_terms("medical", VocabularyConfig())
    resolved = lexicon(Vocabulary(dictionary="medical"), CONFIG)
    assert len(medical) > 1000 and resolved is not None and resolved.for_language("ru")


def test_an_unreadable_configured_dictionary_stops_the_replica_naming_it(tmp_path: Path) -> None:
    check_dictionaries(CONFIG)  # the shipped and the configured ones read
    (tmp_path / "latin1.txt").write_bytes("Zolvad\xe9x".encode("latin-1"))
    for path in (tmp_path / "missing.txt", tmp_path / "latin1.txt"):
        with pytest.raises(ValueError, match=r"vocabulary.dictionaries\['clinic'\]: cannot read .*" + path.name):
            check_dictionaries(VocabularyConfig(dictionaries={"clinic": str(path)}))


def test_a_lexicon_puts_the_clients_terms_first_and_splits_by_script() -> None:
    resolved = lexicon(Vocabulary(terms=("Kardiolin", "Zed"), dictionary="clinic"), CONFIG)
    assert resolved is not None and resolved.terms == ("Kardiolin", "Zed", "Nexara", "Zolvadex extended")
    both = lexicon(Vocabulary(terms=("метформин", "Metformin")), CONFIG)
    assert both is not None and both.for_language("ru") == ("метформин",) and both.for_language("en") == ("Metformin",)
    assert lexicon(Vocabulary(), CONFIG) is None and lexicon(None, CONFIG) is None
    with pytest.raises(InputRejectedError, match="dictionary: unknown dictionary 'legal'"):
        lexicon(Vocabulary(dictionary="legal"), CONFIG)


def test_the_prompt_lists_the_terms_before_the_clients_prompt() -> None:
    assert biasing_prompt(["Nexara", "Zolvadex"], "Earlier: a call.") == " Nexara, Zolvadex. Earlier: a call."
    assert biasing_prompt([], "Earlier: a call.") == "Earlier: a call." and biasing_prompt([], None) is None


def test_when_too_many_terms_those_like_the_first_reading_are_chosen_within_budget() -> None:
    terms = tuple(dictionary_terms("medical", VocabularyConfig()))
    assert not fits(terms, 120)
    chosen = choose_terms(terms, "The patient takes metaformin and lisa nopril every day.", 120)
    assert {"metformin", "lisinopril"} <= {term.lower() for term in chosen}
    assert sum(term_tokens(term) for term in chosen) <= 120
    assert choose_terms(["Nexara"], "", 120) == ["Nexara"]  # all fit: no reading needed


@pytest.mark.parametrize(
    ("heard", "written"),
    [
        (" The patient takes Metaformin daily.", " The patient takes Metformin daily."),
        (" Then lisa nopril, twice.", " Then lisinopril, twice."),
        (" We deployed it on Cubernetes.", " We deployed it on Kubernetes."),
        (" Nexora answered.", " Nexara answered."),
        (" Ator vastatin helps.", " Atorvastatin helps."),
        (" Пациент принимает метформин и мет формин.", " Пациент принимает метформин и метформин."),
    ],
)
def test_a_misheard_term_takes_its_spelling(heard: str, written: str) -> None:
    assert Corrector(TERMS).correct_text(heard) == written


def test_common_words_are_never_replaced() -> None:
    corrector = Corrector([*TERMS, "Nextera", "Famly", "Dinnor", "Evrything", "indwelling", "methotrexate"])
    assert corrector.correct_text(COMMON) == COMMON
    assert corrector.correct_text(" It comes thus well-ing on the left.") == " It comes thus well-ing on the left."
    assert corrector.correct_text(" A small methorex on the left.").endswith(" on the left.")  # a run ends on a term


def test_correction_is_idempotent_and_spellings_replace_exactly() -> None:
    corrector = Corrector(TERMS, [Spelling(heard=("sequel", "ess queue ell"), written="SQL")])
    once = corrector.correct_text(" Metaformin and sequel, then ess queue ell and lisa nopril.")
    assert once == " Metformin and SQL, then SQL and lisinopril."
    assert corrector.correct_text(once) == once


def test_words_and_segment_text_are_corrected_alike() -> None:
    words = [Word(word=w, start=i, end=i + 0.5, prob=0.9) for i, w in enumerate([" Take", " lisa", " nopril."])]
    segment = Segment(id=0, seek=0, start=0, end=3, text=" Take lisa nopril.", tokens=[], temperature=0,
                      avg_logprob=0, compression_ratio=1, no_speech_prob=0)  # fmt: skip
    chunk = correct_chunk(Corrector(TERMS), ChunkTranscript(language="en", segments=[segment], words=words))
    assert chunk.segments[0].text == "".join(word.word for word in chunk.words) == " Take lisinopril."
    assert (chunk.words[1].start, chunk.words[1].end) == (1, 2.5)


def test_a_request_vocabulary_prompts_and_corrects_in_its_language() -> None:
    applied = AppliedVocabulary.of(Vocabulary(terms=("Nexara", "метформин")), CONFIG, "Previously.")
    assert applied is not None and applied.fits("en")
    assert applied.first_prompt("en") == " Nexara. Previously."
    assert applied.first_prompt("ru") == " метформин. Previously."
    medical = AppliedVocabulary.of(Vocabulary(dictionary="medical"), CONFIG, None)
    assert medical is not None and not medical.fits("en") and medical.first_prompt("en") is None
    off = AppliedVocabulary.of(Vocabulary(terms=("Nexara",)), VocabularyConfig(correction=False), None)
    assert off is not None and off.corrector("en") is None


def test_a_second_reading_that_reads_its_prompt_back_is_an_echo() -> None:
    terms = ["ампициллин", "гепатит", "серотонин", "сантонин", "Metformin"]
    assert echoes("Ампициллин, гепатит, сантонин, серотонин.", "Дмитру Азаши Импицылина Патни.", terms)
    assert echoes("Metformin, Metformin, Metformin.", "Met for men.", terms)
    assert echoes("Metformin.", "The patient was started on met for men for her blood sugar.", terms)
    assert not echoes("The patient was started on metformin for her blood sugar.", "The patient was started on"
                      " met for men for her blood sugar.", terms)  # fmt: skip


def test_a_live_session_prompts_each_reading_with_its_terms_and_keeps_its_words(monkeypatch) -> None:
    from deployments.live.events import SessionSettings, TranscriptEvent
    from tests import test_live_session as live

    prompts: list[str | None] = []
    transcribe = live.FakeModels.transcribe

    async def prompted(self: live.FakeModels, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        prompts.append(options.prompt)
        return await transcribe(self, samples, options)

    monkeypatch.setattr(live.FakeModels, "transcribe", prompted)
    settings = SessionSettings(vocabulary=Vocabulary(terms=("Nexara", "Zolvadex")))
    events, models = asyncio.run(live.run_session(settings))
    assert prompts and set(prompts) == {" Nexara, Zolvadex."}
    words = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    assert words == [text for text, _, _ in models.script]  # nothing there sounds like a term


def test_a_reading_of_mostly_terms_reads_its_prompt_back() -> None:
    terms = ["Евдокия", "Шпаковская", "Ильдар", "Хабибуллин", "Некстара", "Siobhan", "Kowalczyk", "Nexara"]
    assert reads_back("Сет под готовья Евдокия, Шпаковская, Ильдар, Хабибуллин, Некстара.", terms)
    assert not reads_back("Siobhan Kowalczyk will present the Nexara roadmap on Monday.", terms)


def test_a_short_term_inside_other_words_is_not_read_back() -> None:
    assert not reads_back("We are going to a good place; the array ago was good.", ["Go", "Ray"])
    assert reads_back("Go, go, go.", ["Go"]) and reads_back("Ray. Ray, Ray!", ["Ray"])


class _Prompted(pipeline_tests._Transcriber):
    """Writes `Metaformin` unprompted, `metformin` with it in the prompt, and reads any other prompt back."""

    async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        transcript = await super()._transcribe(chunk, options, hints)
        prompt = options.prompt or ""
        text = " Take metformin twice." if "metformin" in prompt else " Nexara, Nexara, Nexara." if prompt else ""
        segment = transcript.segments[0].model_copy(update={"text": text or " Take Metaformin twice."})
        return transcript.model_copy(update={"segments": [segment]})


@pytest.mark.parametrize(
    ("vocabulary", "prompts"),
    [
        (Vocabulary(dictionary="medical"), [None, "metformin"]),  # too many terms: a first reading chooses them
        (Vocabulary(terms=("Nexara",)), [" Nexara.", None]),  # all fit; the prompt read back: read again without
    ],
)
def test_the_pipeline_reads_again_with_the_terms_or_without_them_and_corrects(
    tmp_path: Path, vocabulary: Vocabulary, prompts: list[str | None]
) -> None:
    transcriber = _Prompted()
    path = pipeline_tests._wav(tmp_path, [(0.0, 3.0)])
    request = pipeline_tests._request(path, language="en")
    request.options.vocabulary = vocabulary
    transcript = asyncio.run(pipeline_tests._pipeline(tmp_path, transcriber).transcribe(request))
    assert isinstance(transcript, Transcript)
    sent = [call.prompt for call in transcriber.calls]
    assert len(sent) == 2 and sent[0] == prompts[0]
    assert sent[1] is None if prompts[1] is None else prompts[1] in (sent[1] or "")
    expected = " Take metformin twice." if vocabulary.dictionary else " Take Metaformin twice."
    assert transcript.text == expected.strip() and pipeline_tests._decoded_copies(tmp_path) == []
