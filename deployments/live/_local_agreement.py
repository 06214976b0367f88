"""Which of Whisper's words over a growing buffer are final: LocalAgreement-2 (Macháček et al., "Turning
Whisper into Real-Time Transcription System", 2023).

Each look at the buffer gives a hypothesis; a word is final once two consecutive hypotheses agree on it and
on every word before it. So that a word need not wait for a second look, a word is also final when it
ended at least the session's delay before the end of the audio read (`settled_before`): Whisper rarely
changes its mind about words with that much audio after them, and the delay is the client's choice of
accuracy against latency. Final words are never revised. At a pause the caller may finalise everything
heard before it (`commit_through`): no later audio can change those words.

Whisper re-reads audio it already transcribed (the buffer keeps it as context), so each hypothesis is first
cut to what lies past the last final words: after them where the hypothesis holds them near where they ended
(found by their text: a reading of a different length moves words' times), else past the last final word's
end by time, less a repeat of the last final words at its head.
"""

import re
from dataclasses import dataclass

START_SLACK_S = 0.1
"""Whisper's word starts wobble by this much between looks; a word starting this close before the last
final word's end is still new."""
LONGEST_REPEAT = 5
ANCHOR_SLACK_S = 1.5
"""How far a re-read may move the last final word and still be recognised as it."""


@dataclass(frozen=True)
class TimedWord:
    text: str
    """As Whisper wrote it, with its leading space."""
    start: float
    end: float
    """Seconds since the session's first sample."""

    @property
    def key(self) -> str:
        """What two hypotheses must agree on: the word without case or punctuation around it."""
        return re.sub(r"^\W+|\W+$", "", self.text.strip().lower())


class LocalAgreement:
    def __init__(self) -> None:
        self.final_until = 0.0
        self.final_tail: list[str] = []  # keys of the last final words, to spot Whisper repeating them
        self.previous: list[TimedWord] = []

    def update(self, hypothesis: list[TimedWord], settled_before: float = 0.0) -> list[TimedWord]:
        """The words this hypothesis makes final: the longest prefix it shares with the previous one, and
        after it the words that end before `settled_before`."""
        new = self._past_final(hypothesis)
        agreed = 0
        while agreed < min(len(new), len(self.previous)) and new[agreed].key == self.previous[agreed].key:
            agreed += 1
        while agreed < len(new) and new[agreed].end <= settled_before:
            agreed += 1
        final, self.previous = new[:agreed], new[agreed:]
        self._finalise(final)
        return final

    def commit_through(self, hypothesis: list[TimedWord], until: float) -> list[TimedWord]:
        """Every new word of the hypothesis that starts before `until` is final: nothing after a pause
        will change it."""
        new = self._past_final(hypothesis)
        final = [word for word in new if word.start < until]
        self.previous = new[len(final) :]
        self._finalise(final)
        return final

    def _past_final(self, hypothesis: list[TimedWord]) -> list[TimedWord]:
        words = [word for word in hypothesis if word.key]
        anchored = self._after_final_tail(words)
        if anchored is not None:
            return anchored
        new = [word for word in words if word.start >= self.final_until - START_SLACK_S]
        for size in range(min(LONGEST_REPEAT, len(new), len(self.final_tail)), 0, -1):
            if [word.key for word in new[:size]] == self.final_tail[-size:]:
                return new[size:]
        return new

    def _after_final_tail(self, words: list[TimedWord]) -> list[TimedWord] | None:
        """The words after the last final words, found by their text near where they ended: a re-read that
        moves words' times (a reading of a different length does) then neither repeats them nor drops new
        ones. None when the hypothesis does not hold the last final words there."""
        if not self.final_tail:
            return None
        shortest = min(2, len(self.final_tail))  # one word alone only when only one is final
        for size in range(min(LONGEST_REPEAT, len(self.final_tail)), shortest - 1, -1):
            tail = self.final_tail[-size:]
            for at in range(len(words) - size, -1, -1):
                if [word.key for word in words[at : at + size]] == tail and (
                    abs(words[at + size - 1].end - self.final_until) <= ANCHOR_SLACK_S
                ):
                    return words[at + size :]
        return None

    def _finalise(self, words: list[TimedWord]) -> None:
        if words:
            self.final_until = max(self.final_until, words[-1].end)
            self.final_tail = (self.final_tail + [word.key for word in words])[-LONGEST_REPEAT:]
