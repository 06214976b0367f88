"""The final transcript of each utterance: read once more, whole, when it ends (issue 50), beside the streaming.

Streamed words are final as soon as they are sent (never revised), so they come from short, growing readings
with little context: the buffer starts at the last pause and is read greedily in a short encoder window. When
an utterance ends (a pause, the client's commit, the end of input), its audio is read again as the file path
reads a chunk (Whisper's 30 s window, `live.final_pass: full`; the configured beam; the whole utterance at
once, after `live.final_context_s` of the audio before it), and that reading's
words replace the streamed ones as the utterance's final transcript: a turn's text and words (OpenAI's
`completed`, nexara's `turn.end`) and the session's text. An utterance over `LONGEST_UTTERANCE_S` is read up to
its last streamed word and goes on from there. The reading runs beside the streaming (`take` is immediate,
`settle` awaits the reading): the next utterance's words stream while it runs, and the turn's end waits for it.
When the input ends while someone speaks, the words not streamed yet are left to that reading (`will_read`,
`take(unread_tail=True)`): one reading after the last frame instead of a streaming reading and then the second.

The second reading rewrites what streaming heard, it does not find speech where streaming found none: an
utterance with no streamed words stays empty, streamed words after the voice's end are dropped (Whisper writes
"Thank you." into noise and into the silence a pause or a commit leaves), its words are those
before the end of the last streamed one, and a reading with far fewer words than were streamed (Whisper
stopping early in a long window) gives way to the streamed words; so does a reading of under 4 s (it has
nothing to add). Audio before the utterance (`live.final_context_s`) is read with it as context; its words,
the previous utterance's, are not repeated: they are told from the utterance's by their text (aligned with the
last final words and the streamed ones) before their time, since a reading moves words across a short pause.
"""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from deployments.config import FinalPassWindow
from deployments.live._local_agreement import TimedWord
from deployments.live._models import Transcribe
from deployments.types import SAMPLE_RATE, ChunkOptions

LONGEST_UTTERANCE_S = 28.0
"""Whisper reads 30 s at once; an utterance this long is read up to its last streamed word."""
SPAN_SLACK_S = 0.5
"""The second reading's words are those up to this after the last streamed word: past it, Whisper writes
"Thank you." into the silence after the last word."""
SPEECH_PAD_S = 0.2
"""Audio read past the voice's end (the file path's VAD chunks keep as much)."""
MOST_BEHIND_S = 2.0
"""More audio than this waiting to be transcribed by a replica's sessions: they are behind, and read nothing
twice."""
SHORTEST_S = 4.0
"""Less audio than this, context included (a session's first words), is no more than streaming read: in a 30 s
window tiny.en read jfk's first 2.8 s as "And so am I fellow Americans", its streamed words were right."""
CONTEXT_WORDS = 30
"""The last final words kept to find them in the next utterance's reading (more than 5 s of context holds)."""
MOST_WAITING = 2
"""Utterances a replica's sessions have waiting for their second reading (one read, the next in line): one more
ends with its streamed words, so second readings never queue up behind a busy Transcriber."""
MOST_WAITING_AT_END = 1
"""At the end of input the last utterance's words not streamed yet are left to its second reading only when no
other utterance of the replica's sessions waits for its reading (`will_read`); otherwise a streaming reading
writes them and `MOST_WAITING` decides the second reading: sessions ending together would each have a client
waiting for a full encoder pass."""
FEWEST_WORDS = 0.5
"""A second reading with fewer words than this share of the streamed ones stopped early: keep the streamed."""


@dataclass(frozen=True)
class SecondReadings:
    """What decides whether an utterance is read again, counted over the sessions of a replica, which share its
    Transcriber: the audio they received and have not transcribed yet, and their utterances waiting for a
    second reading (each session under both bounds on its own says nothing of the three others beside it).
    Counted from the sessions open, so a closed one counts for nothing."""

    behind_s: Callable[[], float]
    waiting: Callable[[], int]


@dataclass(frozen=True)
class SpokenWord:
    """A final word and its speaker (None without diarization)."""

    word: TimedWord
    speaker: int | None


@dataclass(frozen=True)
class Utterance:
    """An ended utterance, taken from the session (`FinalPass.take`): what its final words are made of."""

    streamed: list[SpokenWord]
    audio: np.ndarray | None
    """What its second reading reads (the context first); None: its streamed words are its final words."""
    start_s: float
    """Where `audio` starts, in seconds since the session's first sample."""
    heard_until: float
    """A second reading's words up to this are the utterance's (past it, Whisper writes into silence)."""
    after_s: float
    """The previous utterance's words lie before this."""
    language: str | None
    prompt: str | None


class FinalPass:
    """The audio and streamed words of the utterance going on, and its second reading."""

    def __init__(
        self,
        transcribe: Transcribe,
        window: FinalPassWindow,
        preroll_s: float,
        context_s: float,
        readings: SecondReadings | None = None,
    ) -> None:
        self.transcribe = transcribe
        self.readings = readings or SecondReadings(lambda: 0.0, lambda: self.waiting)
        self.window = window
        self.keep = int(max(preroll_s, context_s) * SAMPLE_RATE)  # audio kept before the utterance
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0  # samples since the session's first
        self.utterance_from = 0.0  # seconds: the words of the last reading's utterance lie before this
        self.last_final: list[str] = []  # the last final words' keys, to know them in the next reading
        self.streamed: list[SpokenWord] = []
        self.cleared = False  # the client dropped some of this audio: its streamed words are the transcript
        self.waiting = 0  # utterances taken and not yet read again

    @property
    def end(self) -> int:
        return self.start + len(self.samples)

    @property
    def too_long(self) -> bool:
        return len(self.samples) > LONGEST_UTTERANCE_S * SAMPLE_RATE

    def add(self, samples: np.ndarray) -> None:
        self.samples = np.concatenate([self.samples, samples])

    def add_streamed(self, words: list[TimedWord], speakers: Sequence[int | None]) -> None:
        self.streamed += [SpokenWord(word, speaker) for word, speaker in zip(words, speakers, strict=True)]

    def clear(self) -> None:
        self.cleared = True

    def idle(self) -> None:
        """No speech and no word waiting: keep only what a next utterance's first word needs."""
        if not self.streamed:
            self._cut(self.end - self.keep)

    def take(
        self, until: int, voiced_end: int, language: str | None, prompt: str | None = None, unread_tail: bool = False
    ) -> Utterance:
        """The utterance of the streamed words that lie before `until` (samples since the session's first), with
        the audio its second reading needs; the audio before it is dropped but for the context. The reading ends
        where the voice did (`voiced_end`), padded as a file's chunk is: past it, Whisper writes "Thank you." into
        the silence. `prompt`: the session's vocabulary, as its streaming readings have it. `unread_tail`: the
        words after the last streamed one were not read (the end of input: the second reading writes them, see
        `will_read`). Taking is immediate: the reading (`settle`) runs beside the streaming."""
        cut_s = until / SAMPLE_RATE
        read_until = self._read_until(voiced_end)
        streamed = self._streamed_before(until, voiced_end)
        self.streamed = [spoken for spoken in self.streamed if _middle(spoken.word) >= cut_s]
        audio, heard_until = None, 0.0
        if self._worth_reading(streamed, read_until, MOST_WAITING_AT_END if unread_tail else MOST_WAITING):
            audio = self.samples[: read_until - self.start]
            heard_until = min(cut_s, read_until / SAMPLE_RATE)
            if not unread_tail:
                heard_until = min(heard_until, streamed[-1].word.end + SPAN_SLACK_S)
            self.waiting += 1
        start_s = self.start / SAMPLE_RATE
        utterance = Utterance(streamed, audio, start_s, heard_until, self.utterance_from, language, prompt)
        self.cleared = False
        self.utterance_from = max(self.utterance_from, cut_s)
        self._cut(until - self.keep)
        return utterance

    def will_read(self, until: int, voiced_end: int) -> bool:
        """Whether `take` would read the utterance again: at the end of input the channel then leaves the words
        not streamed yet to that reading, rather than reading them first in a streaming reading of their own
        (the two one after the other were the session's last 3 s on a loaded CPU)."""
        streamed = self._streamed_before(until, voiced_end)
        return self._worth_reading(streamed, self._read_until(voiced_end), MOST_WAITING_AT_END)

    async def settle(self, utterance: Utterance, after: Awaitable[object] | None = None) -> list[SpokenWord]:
        """The utterance's final words: its second reading's, else its streamed ones. Utterances are settled in
        the order they were taken: `after` is the last one's settling (see `read_again`)."""
        read = await self.read_again(utterance, after)
        words = utterance.streamed if read is None else with_speakers(read, utterance.streamed)
        self.settled(words)
        return words

    async def read_again(self, utterance: Utterance, after: Awaitable[object] | None = None) -> list[TimedWord] | None:
        """The utterance's words as its second reading writes them; None without one, or when the reading
        stopped early (far fewer words than were streamed). `after`, the last utterance's settling, is awaited
        once the reading is done: the two readings run side by side, and this one's context words are told
        from its own by the last one's final words."""
        if utterance.audio is None:
            if after is not None:
                await after
            return None
        try:
            reading = await self._reread(utterance.audio, utterance)
        finally:
            self.waiting -= 1
        if after is not None:
            await after
        heard = [word for word in reading if _middle(word) < utterance.heard_until]
        read = heard[self._context_words(heard, utterance) :]
        return read if read and len(read) >= FEWEST_WORDS * len(utterance.streamed) else None

    def settled(self, words: list[SpokenWord]) -> None:
        """These are the utterance's final words: the next reading finds them in its context."""
        self.last_final = (self.last_final + [spoken.word.key for spoken in words])[-CONTEXT_WORDS:]

    def last_streamed_end(self) -> int:
        """Where a too long utterance is read up to: its last streamed word's end, else all of it."""
        return int(self.streamed[-1].word.end * SAMPLE_RATE) if self.streamed else self.end

    def _read_until(self, voiced_end: int) -> int:
        return min(self.end, voiced_end + int(SPEECH_PAD_S * SAMPLE_RATE))

    def _streamed_before(self, until: int, voiced_end: int) -> list[SpokenWord]:
        """The streamed words before `until`, less those after the voice's end: Whisper writing "Thank you." into
        the silence a pause or a commit left (an utterance of only those stays empty, and they never end one,
        nor stretch its reading's span)."""
        last = min(until / SAMPLE_RATE, voiced_end / SAMPLE_RATE + SPAN_SLACK_S)
        return [spoken for spoken in self.streamed if _middle(spoken.word) < last]

    def _worth_reading(self, streamed: list[SpokenWord], read_until: int, most_waiting: int) -> bool:
        """Whether to read the utterance again: it has streamed words, is long enough to gain from it, none of it
        was cleared, and the replica's sessions keep up (a second reading is a full encoder pass: when they
        cannot keep up, or `most_waiting` utterances already wait for theirs, the streamed words are the final
        transcript, rather than falling further behind)."""
        long_enough = read_until - self.start >= SHORTEST_S * SAMPLE_RATE
        keeps_up = self.readings.behind_s() <= MOST_BEHIND_S and self.readings.waiting() < most_waiting
        return self.window != "none" and not self.cleared and bool(streamed) and long_enough and keeps_up

    def _context_words(self, reading: list[TimedWord], utterance: Utterance) -> int:
        """How many of the first words read are the context's (the previous utterances'): those before the
        pause by time, unless their text says otherwise. A reading moves words across a short pause (nexara's
        220 ms), both ways, so the reading is aligned with the last final words followed by the utterance's
        streamed words: a word matched to a final one is context, a word matched to a streamed one is the
        utterance's, and only the words between the two are placed by time. A phrase said again is both in
        the final words and in the streamed ones, and is kept once on each side."""
        by_time = sum(1 for word in reading if _middle(word) < utterance.after_s)
        before, streamed = self.last_final, [spoken.word.key for spoken in utterance.streamed]
        aligned = SequenceMatcher(None, [word.key for word in reading], before + streamed, autojunk=False)
        pairs = [(a + i, b + i) for a, b, size in aligned.get_matching_blocks() for i in range(size)]
        last_context = max((a for a, b in pairs if b < len(before)), default=-1)
        first_own = min((a for a, b in pairs if b >= len(before)), default=len(reading))
        return min(max(by_time, last_context + 1), first_own)

    async def _reread(self, audio: np.ndarray, utterance: Utterance) -> list[TimedWord]:
        window = "audio" if self.window == "audio" else "full"
        options = ChunkOptions(
            language=utterance.language,
            word_timestamps=True,
            segment_timestamps=False,
            encoder_window=window,
            prompt=utterance.prompt,
        )
        transcript = await self.transcribe(audio, options)
        offset = utterance.start_s
        return [TimedWord(w.word, w.start + offset, w.end + offset) for w in transcript.words if w.word.strip()]

    def _cut(self, sample: int) -> None:
        drop = min(max(0, sample - self.start), len(self.samples))
        if drop:
            self.samples = self.samples[drop:]
            self.start += drop


def _middle(word: TimedWord) -> float:
    """Where a word lies: a word after a pause often starts, in Whisper's times, where the pause does."""
    return (word.start + word.end) / 2


def words_after(read: list[TimedWord], last: TimedWord) -> list[TimedWord]:
    """The words read after the last streamed one (`last`): past its end, less the word itself read a little
    later."""
    after = [word for word in read if _middle(word) > last.end]
    return after[1:] if after and after[0].key == last.key else after


def with_speakers(words: list[TimedWord], spoken: list[SpokenWord]) -> list[SpokenWord]:
    """Words read again, each with the speaker of the spoken (streamed) word it overlaps most."""
    return [SpokenWord(word, _speaker_of(word, spoken)) for word in words]


def _speaker_of(word: TimedWord, streamed: list[SpokenWord]) -> int | None:
    """The speaker of the streamed word that overlaps `word` most, else of the nearest one."""

    def closeness(spoken: SpokenWord) -> tuple[float, float]:
        overlap = min(word.end, spoken.word.end) - max(word.start, spoken.word.start)
        distance = abs((word.start + word.end) - (spoken.word.start + spoken.word.end))
        return overlap, -distance

    return max(streamed, key=closeness).speaker
