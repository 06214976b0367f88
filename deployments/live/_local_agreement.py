"""Which of Whisper's words over a growing buffer are final: LocalAgreement-2 (Macháček et al., "Turning
Whisper into Real-Time Transcription System", 2023).

Each look at the buffer gives a hypothesis; a word is final once two consecutive hypotheses agree on it and
on every word before it. So that a word need not wait for a second look, a word is also final when it
ended at least the session's delay before the end of the audio read (`settled_before`): Whisper rarely
changes its mind about words with that much audio after them, and the delay is the client's choice of
accuracy against latency. Final words are never revised. At a pause the caller may finalise everything
heard before it (`commit_through`): no later audio can change those words.

Whisper re-reads audio it already transcribed (the buffer keeps it as context), so each hypothesis is first
cut to what lies past the last final words, by time first and text second. Only the final words inside the
audio read (it starts at `read_from`) can be read again: a reading that starts after the last final word holds
nothing said before, and a phrase said again after a pause is new speech however similar its text ("no, no";
"thank you, thank you"). Otherwise the final words are found in the hypothesis among its first words by their
text, the occurrence that ends nearest where they ended (a reading of a different length moves words' times,
by up to `ANCHOR_SLACK_S`), and what follows is new; failing that, the words past the last final word's end by
time, less a repeat of the last final words at its head that overlaps them.
"""

import re
from dataclasses import dataclass

START_SLACK_S = 0.1
"""Whisper's word starts wobble by this much between looks; a word starting this close before the last
final word's end is still new."""
LONGEST_REPEAT = 5
ANCHOR_SLACK_S = 1.5
"""How far a re-read may move the last final word and still be recognised as it."""
REREAD_SLACK_WORDS = 4
"""How many more words than were final a re-read may write before the last of them ("it's hard" read again as
"I'd heard to", "100%" as "100 percent")."""
MAX_WORDS_PER_S = 8.0
"""Faster than speech: the final words written again this fast after themselves are a loop of Whisper's (it
squeezes a repeat of what it wrote into a fraction of a second), not said again."""
SHORTEST_LOOP = 3
"""Fewer words squeezed together are as often words piled at the end of the audio read."""
SQUEEZED_WORDS_PER_S = 15.0
"""Faster than anyone says three words: a run written this fast waits for a second reading (`_squeezed`). Whisper's
squeezes ran at 30-50 words a second; its alignment gives quick short words ("I heard a", 0.28 s on the call)
about 10, and at 8 those waited, with every word after them, until the next pause."""
KEPT_FINAL_WORDS = 200
"""More than the longest buffer holds."""


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
        self.final_words: list[TimedWord] = []  # the last final words, to find them read again
        self.previous: list[TimedWord] = []

    def update(
        self, hypothesis: list[TimedWord], settled_before: float = 0.0, read_from: float = 0.0
    ) -> list[TimedWord]:
        """The words this hypothesis (of the audio from `read_from` on) makes final: the longest prefix it
        shares with the previous one, and after it the words that end before `settled_before`."""
        new = self._past_final(hypothesis, read_from)
        agreed = 0
        while agreed < min(len(new), len(self.previous)) and new[agreed].key == self.previous[agreed].key:
            agreed += 1
        squeezed = _squeezed(new)
        while agreed < len(new) and new[agreed].end <= settled_before and agreed not in squeezed:
            agreed += 1
        final, self.previous = new[:agreed], new[agreed:]
        self._finalise(final)
        return final

    def commit_through(self, hypothesis: list[TimedWord], until: float, read_from: float = 0.0) -> list[TimedWord]:
        """Every new word of the hypothesis that starts before `until` is final: nothing after a pause
        will change it."""
        new = self._past_final(hypothesis, read_from)
        final = [word for word in new if word.start < until]
        self.previous = new[len(final) :]
        self._finalise(final)
        return final

    def _past_final(self, hypothesis: list[TimedWord], read_from: float) -> list[TimedWord]:
        words = [word for word in hypothesis if word.key]
        reread = [word.key for word in self.final_words if word.end > read_from or word.start >= read_from]
        if not reread:  # the audio read starts after the last final word: every word in it is new
            return words
        anchored = self._after_reread(words, reread)
        if anchored is not None:
            return anchored
        new = [word for word in words if word.start >= self.final_until - START_SLACK_S]
        if new and new[0].start < self.final_until + START_SLACK_S:  # a head that overlaps the final audio
            for size in range(min(LONGEST_REPEAT, len(new), len(reread)), 0, -1):
                if [word.key for word in new[:size]] == reread[-size:]:
                    return new[size:]
        return new

    def _after_reread(self, words: list[TimedWord], reread: list[str]) -> list[TimedWord] | None:
        """The words after the last final words read again: their text among the hypothesis's first words
        (the audio read holds `len(reread)` final words, read first), within `ANCHOR_SLACK_S` of where they
        ended; of several, the one where a reading that wrote all of them again holds them, or after it the
        end of a loop of Whisper's. None when the hypothesis does not hold them there."""
        for size in range(min(LONGEST_REPEAT, len(reread)), 0, -1):
            tail = reread[-size:]
            ends = [  # where the tail ends in the hypothesis, near where it ended
                at + size - 1
                for at in range(len(words) - size + 1)
                if [word.key for word in words[at : at + size]] == tail
                and abs(words[at + size - 1].end - self.final_until) <= ANCHOR_SLACK_S
            ]
            expected = len(reread) - 1  # where a reading that wrote all of them again ends them
            near = [end for end in ends if end <= expected + REREAD_SLACK_WORDS]
            if not near:
                continue
            chosen = min(near, key=lambda end: (abs(end - expected), abs(words[end].end - self.final_until)))
            for later in (end for end in ends if end > chosen):
                looped = later - chosen
                if looped >= SHORTEST_LOOP and looped > (words[later].end - words[chosen].end) * MAX_WORDS_PER_S:
                    chosen = later  # the same words again, faster than anyone speaks: Whisper looped
            return words[chosen + 1 :]
        return None

    def _finalise(self, words: list[TimedWord]) -> None:
        if words:
            self.final_until = max(self.final_until, words[-1].end)
            self.final_words = (self.final_words + words)[-KEPT_FINAL_WORDS:]


def _squeezed(words: list[TimedWord]) -> set[int]:
    """The words of runs of `SHORTEST_LOOP` or more written faster than anyone speaks: Whisper squeezes a loop or a
    guess into a fraction of a second (tiny.en wrote the context "I didn't know you were" again into 0.16 s over
    "Neither did I"). Such words are final only once two readings agree on them, however long ago they ended."""
    marked: set[int] = set()
    for first in range(len(words) - SHORTEST_LOOP + 1):
        last = first + SHORTEST_LOOP - 1
        if (words[last].end - words[first].start) * SQUEEZED_WORDS_PER_S < SHORTEST_LOOP:
            marked.update(range(first, last + 1))
    return marked
