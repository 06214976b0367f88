"""The audio a live channel holds: the buffer Whisper reads, and the last seconds heard.

The buffer starts a little before the last pause or cut (the final words of the last `context_s` before it,
so that Whisper reads the next words after the ones they follow; those are not repeated) and reaches the newest
sample; `start` places it on the session's clock (samples since the session's first), so that Whisper's times
within it become session times. A buffer longer than `max_buffer_s` is cut at its last final sentence end, else
at its last final word, so Whisper rereads only what it needs as context. `RecentAudio`, which no cut shortens,
is what Smart Turn and the speaker encoder hear: at least as far back as a word of the buffer may lie.
"""

import numpy as np

from deployments.live._local_agreement import TimedWord
from deployments.types import SAMPLE_RATE

PREROLL_S = 0.3
"""Audio kept before speech starts, so its first word is whole (the default: `SessionSettings.preroll_ms`)."""
RECENT_S = 8
"""The least audio `RecentAudio` keeps: Smart Turn's window."""
SENTENCE_ENDS = (".", "?", "!")
WORD_LEAD_S = 0.1
"""Audio kept before a context word's aligned start: alignment places starts a little late."""


class AudioBuffer:
    def __init__(self, max_buffer_s: float, preroll_s: float = PREROLL_S, context_s: float = 0.0) -> None:
        self.max_samples = max_buffer_s * SAMPLE_RATE
        self.preroll = int(preroll_s * SAMPLE_RATE)
        self.context = int(context_s * SAMPLE_RATE)
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0  # samples since the session's first
        self.final_words: list[TimedWord] = []  # final words still inside the buffer

    @property
    def end(self) -> int:
        """Samples received so far: the buffer always reaches the newest."""
        return self.start + len(self.samples)

    @property
    def too_long(self) -> bool:
        return len(self.samples) > self.max_samples

    def add(self, samples: np.ndarray) -> None:
        self.samples = np.concatenate([self.samples, samples])

    def add_final(self, words: list[TimedWord]) -> None:
        self.final_words += words

    def final_cut(self, final_until: float) -> float | None:
        """Where to cut a long buffer (seconds): at its last final sentence end if more than 2 s in, else at the
        last final word's end (`final_until`); None when that would drop no more than its first second."""
        ends = [word.end for word in self.final_words if word.text.rstrip().endswith(SENTENCE_ENDS)]
        cut = ends[-1] if ends and ends[-1] - self.start / SAMPLE_RATE > 2 else final_until
        return None if cut * SAMPLE_RATE <= self.start + SAMPLE_RATE else cut

    def cut(self, sample: int) -> None:
        """Drop the audio before `sample`."""
        drop = min(max(0, sample - self.start), len(self.samples))
        if drop:
            self.samples = self.samples[drop:]
            self.start += drop
            self.final_words = [word for word in self.final_words if word.end * SAMPLE_RATE > self.start]

    def cut_before_speech(self, sample: int) -> None:
        """Drop the audio before `sample` but the little that keeps a word starting there whole, and the context:
        the final words that started within `context_s` before it, whole (a word cut in two would be a sound
        Whisper cannot write, and a reading that leaves sound unwritten is read again in a longer window). No context
        after a sentence end: in a short encoder window Whisper then often writes the context and stops, and
        the reading is read again in a longer window (a fifth of all readings on the benchmark's meetings)."""
        keep_from = sample - self.preroll
        context = [word.start for word in self.final_words if word.start * SAMPLE_RATE >= sample - self.context]
        if context and not self.final_words[-1].text.rstrip().endswith(SENTENCE_ENDS):
            keep_from = min(keep_from, int((min(context) - WORD_LEAD_S) * SAMPLE_RATE))
        self.cut(keep_from)


class RecentAudio:
    """The last `keep_s` heard (at least `RECENT_S`), on the session's clock. A channel keeps as much as its buffer
    may hold when words become final (`max_buffer_s` and a step of audio that arrived at once) and a speaker window
    around the oldest: words of a client ahead of real time, or of a session catching up, are final up to 13 s
    after they were heard, and with 8 s kept a fifth of them had no voice to label them by (each took the label
    of the word before)."""

    def __init__(self, keep_s: float = RECENT_S) -> None:
        self.keep = int(max(keep_s, RECENT_S) * SAMPLE_RATE)
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0  # samples since the session's first

    def add(self, samples: np.ndarray) -> None:
        keep = self.keep
        self.samples = np.concatenate([self.samples, samples])
        if len(self.samples) > keep:
            self.start += len(self.samples) - keep
            self.samples = self.samples[-keep:]

    def between(self, start: int, end: int) -> np.ndarray:
        """The audio from `start` to `end` (samples since the session's first), as much of it as is kept."""
        return self.samples[max(0, start - self.start) : max(0, end - self.start)]
