"""Word error rate with jiwer, after the usual normalization (case, punctuation, spacing), and the words
two decodes of the same audio share, for comparing their times."""

from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

import jiwer

from deployments.types import Word

_normalize = jiwer.Compose(
    [
        jiwer.ToLowerCase(),
        jiwer.RemovePunctuation(),  # type: ignore[no-untyped-call]
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
        jiwer.ReduceToListOfListOfWords(),
    ]
)


def word_error_rate(reference: str | list[str], hypothesis: str | list[str]) -> float:
    """Of one text, or of several texts together (their errors over their reference words)."""
    return jiwer.wer(reference, hypothesis, reference_transform=_normalize, hypothesis_transform=_normalize)


@dataclass(frozen=True)
class WordErrors:
    """Words dropped, written wrong and written extra against a reference, and its length."""

    deleted: int
    substituted: int
    inserted: int
    reference_words: int

    @property
    def rate(self) -> float:
        return (self.deleted + self.substituted + self.inserted) / max(1, self.reference_words)


def word_errors(reference: str | list[str], hypothesis: str | list[str]) -> WordErrors:
    """`word_error_rate`'s errors, counted by kind."""
    out = jiwer.process_words(reference, hypothesis, reference_transform=_normalize, hypothesis_transform=_normalize)
    words = out.hits + out.substitutions + out.deletions
    return WordErrors(out.deletions, out.substitutions, out.insertions, words)


def differences(reference: str, hypothesis: str) -> list[str]:
    """Where two texts' words differ, as 'these -> those' (jiwer's alignment, normalized as above)."""
    out = jiwer.process_words(reference, hypothesis, reference_transform=_normalize, hypothesis_transform=_normalize)
    ref, hyp = out.references[0], out.hypotheses[0]
    said = [
        (" ".join(ref[c.ref_start_idx : c.ref_end_idx]), " ".join(hyp[c.hyp_start_idx : c.hyp_end_idx]))
        for c in out.alignments[0]
        if c.type != "equal"
    ]
    return [f"{these or '-'} -> {those or '-'}" for these, those in said]


def stm_transcript(stm_path: Path, until: float = float("inf")) -> str:
    """The reference text of an STM file (`file channel speaker start end words...`), in time order: the
    utterances that end by `until` seconds."""
    rows = [line.split(maxsplit=5) for line in stm_path.read_text().splitlines() if line.strip()]
    rows = [row for row in rows if len(row) == 6 and float(row[4]) <= until]
    return " ".join(row[5] for row in sorted(rows, key=lambda row: float(row[3])))


def matched_words(first: list[Word], second: list[Word]) -> list[tuple[Word, Word]]:
    """The words both decodes have, matched in order (two decodes of the same audio may differ in a word
    or two)."""
    matcher = SequenceMatcher(a=[w.word.lower() for w in first], b=[w.word.lower() for w in second], autojunk=False)
    return [(first[a + k], second[b + k]) for a, b, size in matcher.get_matching_blocks() for k in range(size)]
