"""The vocabulary labelled set (tests/data/vocabulary/sentences.json), voiced by espeak-ng, and its two
figures: term recall (the terms said that are written right) and the word error rate of the other words."""

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import jiwer
import numpy as np

from deployments.files.decoding import decode_windows
from deployments.vocabulary import Vocabulary

SET_PATH = Path(__file__).parent.parent / "tests" / "data" / "vocabulary" / "sentences.json"
VOICES = {"en": "en-us", "ru": "ru"}
_normalize = jiwer.Compose(
    [jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip()]  # type: ignore[no-untyped-call]
)


@dataclass(frozen=True)
class Sentence:
    language: str
    vocabulary: str
    text: str
    terms: tuple[str, ...]


def sentences() -> list[Sentence]:
    raw = json.loads(SET_PATH.read_text(encoding="utf-8"))["sentences"]
    return [Sentence(s["language"], s["vocabulary"], s["text"], tuple(s["terms"])) for s in raw]


def vocabulary_for(sentence: Sentence, every: list[Sentence]) -> Vocabulary:
    """What a request names for the sentence: the medical dictionary, or the set's names of its language."""
    if sentence.vocabulary == "medical":
        return Vocabulary(dictionary="medical")
    names = [term for s in every if s.vocabulary == "names" and s.language == sentence.language for term in s.terms]
    return Vocabulary(terms=tuple(names))


def espeak_ng() -> str | None:
    return shutil.which("espeak-ng")


def voiced(text: str, language: str, folder: Path, speed: int = 140) -> np.ndarray:
    """`text` spoken by espeak-ng in the language's voice, as 16 kHz samples."""
    path = folder / f"voiced-{abs(hash(text))}.wav"
    subprocess.run(["espeak-ng", "-v", VOICES[language], "-s", str(speed), "-w", str(path), text], check=True)
    samples = np.concatenate(list(decode_windows(str(path))))
    path.unlink()
    return samples


def _words(text: str) -> list[str]:
    return str(_normalize(text)).split()


def terms_written(sentence: Sentence, hypothesis: str) -> int:
    """How many of the sentence's terms the hypothesis writes exactly (case aside), as whole words."""
    written = f" {' '.join(_words(hypothesis))} "
    return sum(f" {' '.join(_words(term))} " in written for term in sentence.terms)


def other_word_errors(sentence: Sentence, hypothesis: str) -> tuple[int, int]:
    """(errors, words) of the reference's words that are not terms: a substitution or deletion of a term word,
    and a word inserted beside one (a term heard as two words), are the term's, not counted here."""
    reference, written = _words(sentence.text), _words(hypothesis)
    term_words = {word for term in sentence.terms for word in _words(term)}
    is_term = [word in term_words for word in reference]
    if not written:
        return sum(not term for term in is_term), sum(not term for term in is_term)
    alignment = jiwer.process_words(" ".join(reference), " ".join(written)).alignments[0]
    errors = 0
    for chunk in alignment:
        if chunk.type in ("substitute", "delete"):
            errors += sum(not is_term[i] for i in range(chunk.ref_start_idx, chunk.ref_end_idx))
        elif chunk.type == "insert":
            beside = {chunk.ref_start_idx - 1, chunk.ref_start_idx}
            errors += (
                0
                if any(0 <= i < len(is_term) and is_term[i] for i in beside)
                else chunk.hyp_end_idx - chunk.hyp_start_idx
            )
    return errors, sum(not term for term in is_term)
