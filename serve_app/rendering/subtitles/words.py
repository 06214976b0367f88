"""The words subtitle cues are cut from (`CueWord`: stripped, with times that never go back; timed evenly over
their segment for a transcript without word times) and the cue they make (`Cue`)."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from deployments.types import DiarizedSegment, Segment, Word


@dataclass(frozen=True)
class CueWord:
    """A word as subtitles show it: stripped, with its speaker where known."""

    text: str
    start: float
    end: float
    speaker: str | None = None


@dataclass
class Cue:
    start: float
    end: float
    lines: list[list[CueWord]]
    speaker: str | None = None
    words: list[CueWord] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(" ".join(word.text for word in line) for line in self.lines)

    @property
    def characters(self) -> int:
        """What a viewer reads: the text with line breaks as spaces."""
        return sum(len(word.text) for word in self.words) + len(self.words) - 1


def cue_words(words: Sequence[Word]) -> list[CueWord]:
    """The transcript's words as subtitles take them: stripped, empty ones left out, times never going back."""
    stripped = [CueWord(word.word.strip(), word.start, word.end, getattr(word, "speaker", None)) for word in words]
    return _in_order([word for word in stripped if word.text])


def words_of_segments(segments: Sequence[Segment | DiarizedSegment]) -> list[CueWord]:
    """Words for a transcript that has none (one transcribed without word timestamps, an old stored job): each
    segment's words timed evenly by their characters over the segment."""
    out: list[CueWord] = []
    for segment in segments:
        texts = segment.text.split()
        total = sum(len(text) + 1 for text in texts)
        at, span = segment.start, max(segment.end - segment.start, 0.0)
        speaker = getattr(segment, "speaker", None)
        for text in texts:
            length = span * (len(text) + 1) / total
            out.append(CueWord(text, at, at + length, speaker))
            at += length
    return _in_order(out)


def _in_order(words: list[CueWord]) -> list[CueWord]:
    """Words whose times never go back: a word starts no earlier than the one before, ends no earlier than it
    starts."""
    last = 0.0
    kept = []
    for word in words:
        start = max(word.start, last)
        kept.append(CueWord(word.text, start, max(word.end, start), word.speaker))
        last = start
    return kept


def subtitle_words(words: Sequence[Word], segments: Sequence[Segment | DiarizedSegment]) -> list[CueWord]:
    """The words to cut cues from: the transcript's own, or its segments' split evenly when it has none."""
    return cue_words(words) if words else words_of_segments(segments)
