"""Tier 1: the vocabulary mechanisms without a model: term files and dictionaries, which terms go into
Whisper's prompt, and the correction after decoding (a misheard term fixed, a common word never touched,
idempotent, words and text alike)."""

from pathlib import Path

import pytest

from deployments.config import VocabularyConfig
from deployments.types import ChunkTranscript, Segment, Word
from deployments.vocabulary import Spelling, Vocabulary
from deployments.vocabulary.applied import AppliedVocabulary
from deployments.vocabulary.correction import Corrector, correct_chunk
from deployments.vocabulary.dictionaries import dictionary_terms, lexicon, read_terms, unknown_dictionary
from deployments.vocabulary.prompt import biasing_prompt, choose_terms, fits, term_tokens

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
    assert len(medical) > 1000 and lexicon(Vocabulary(dictionary="medical"), CONFIG).for_language("ru")  # type: ignore[union-attr]


def test_a_lexicon_puts_the_clients_terms_first_and_splits_by_script() -> None:
    resolved = lexicon(Vocabulary(terms=("Kardiolin", "Zed"), dictionary="clinic"), CONFIG)
    assert resolved is not None and resolved.terms == ("Kardiolin", "Zed", "Nexara", "Zolvadex extended")
    both = lexicon(Vocabulary(terms=("метформин", "Metformin")), CONFIG)
    assert both is not None and both.for_language("ru") == ("метформин",) and both.for_language("en") == ("Metformin",)
    assert lexicon(Vocabulary(), CONFIG) is None and lexicon(None, CONFIG) is None


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
    corrector = Corrector([*TERMS, "Nextera", "Famly", "Dinnor", "Evrything"])
    assert corrector.correct_text(COMMON) == COMMON


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
