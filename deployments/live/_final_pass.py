"""The final transcript of a live channel: its utterances read once more, together, as a file's chunk is read.

Streamed words are final as soon as they are sent (never revised), so they come from short, growing readings
with little context: the buffer starts at the last pause and is read greedily in a short encoder window. Ended
utterances gather into a group, and a group is read again when its turn ends (Smart Turn's verdict, the VAD's
pause, the client's commit), when it holds `group_s` of audio, after `GROUP_GAP_S` of silence, or at the end of
input: as the file path reads a chunk (Whisper's 30 s window, `live.final_pass: full`; the configured beam; the
whole group at once, after `live.final_context_s` of the audio before it). That reading's words replace the
streamed ones as the group's final transcript: a turn's text and words (OpenAI's `completed`, nexara's
`turn.end`) and the session's text. Reading a turn's utterances together is what makes every utterance's
reading affordable (issue 61): one encoder pass for the turn instead of one per pause, short utterances with
their neighbours, and no context read again between them. Whether a group is read again is
`_second_readings.decide`'s: every group while the replica's sessions keep up. The reading runs beside the
streaming (`close` is immediate, `settle` awaits the reading): the next utterances stream while it runs, and
the turn's end waits for it. When the input ends, or the client commits, while someone speaks, the words not
streamed yet are left to that reading (`will_read`, `end_utterance(unread_tail=True)`).

A short group (a session's first words: no context before them) waits for the audio after it and is read with it
(`LOOKAHEAD_S`), keeping only its own words: Whisper reads a few words alone without the sentence they begin.

The second reading rewrites what streaming heard, it does not find speech where streaming found none: a group
with no streamed words stays empty, streamed words after the voice's end are dropped (Whisper writes
"Thank you." into noise and into the silence a pause or a commit leaves), its words are those before the end of
the last streamed one, and a reading with far fewer words than were streamed (Whisper stopping early in a long
window) gives way to the streamed words. Audio before the group (`live.final_context_s`) is read with it as
context; its words, the previous group's, are not repeated: they are told from the group's by their text
(aligned with the last final words and the streamed ones) before their time, since a reading moves words
across a short pause.
"""

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from deployments.config import FinalPassWindow
from deployments.live._local_agreement import TimedWord
from deployments.live._models import Transcribe
from deployments.live._second_readings import Outcome, SecondReadings, decide, tail_left_to_reading
from deployments.types import SAMPLE_RATE, ChunkOptions

LONGEST_GROUP_S = 28.0
"""Whisper reads 30 s at once; a group whose audio grows this long is ended at its last streamed word."""
GROUP_GAP_S = 2.0
"""Silence after a group's last utterance after which it is read, its turn ended or not."""
SPAN_SLACK_S = 0.5
"""The second reading's words are those up to this after the last streamed word: past it, Whisper writes
"Thank you." into the silence after the last word."""
SPEECH_PAD_S = 0.2
"""Audio read past the voice's end (the file path's VAD chunks keep as much)."""
SHORT_GROUP_S = 6.0
"""A group with less audio than this, context included (a session's first words), is read in a window of
`SHORT_GROUP_WINDOW_S`, not Whisper's 30 s: there tiny.en read jfk's first 2.2 s as "And so am I fellow
Americans" (in 10 and 15 s windows, and base in 30, "And so my fellow Americans"); over 251 s of recordings
the final words were as close to the file's (tiny.en) or closer (base, 13.0% to 12.8%)."""
SHORT_GROUP_WINDOW_S = 15.0
LOOKAHEAD_S = 1.5
"""A short group (under `SHORT_GROUP_S`, context included: a session's first words) is read with this much of the
audio after it, once that has arrived: Whisper reads a few words alone without the sentence they begin (tiny.en
read jfk's first 2.4 s as "And so am I fellow Americans", with 1 s more "And so my fellow Americans ask"). The
words read past the group's voice (`Lookahead.tail_from`) are not its own."""
LOOKAHEAD_WAIT_S = 3.0
"""The longest a short group's reading waits for the audio after it: a client may stop sending (the reading then
reads what there is)."""
CONTEXT_WORDS = 30
"""The last final words kept to find them in the next group's reading (more than 5 s of context holds)."""
FEWEST_WORDS = 0.5
"""A second reading with fewer words than this share of the streamed ones stopped early: keep the streamed."""


@dataclass(frozen=True)
class SpokenWord:
    """A final word and its speaker (None without diarization)."""

    word: TimedWord
    speaker: int | None


class Lookahead:
    """A short group's audio and the audio after it, once that has come (`FinalPass.add`), the session's input
    ended (`FinalPass.flush`), or it would be cut: a reading waits for it (`ready`)."""

    def __init__(self, head: np.ndarray, tail_from: int, until: int) -> None:
        self.head = head
        self.tail_from = tail_from  # sample: where the group's audio ends and the lookahead starts
        self.until = until  # sample: where the lookahead ends
        self.audio = head
        self.ready = asyncio.Event()

    def take(self, samples: np.ndarray, start: int) -> None:
        """The group's audio and what there is of the lookahead in `samples` (which start at sample `start`)."""
        if start <= self.tail_from:
            tail = samples[self.tail_from - start : self.until - start]
            self.audio = np.concatenate([self.head, tail])
        self.ready.set()


@dataclass(frozen=True)
class Group:
    """Ended utterances taken together (`FinalPass.close`): what their final words are made of."""

    streamed: list[SpokenWord]
    audio: np.ndarray | None
    """What its second reading reads (the context first); None: its streamed words are its final words."""
    start_s: float
    """Where `audio` starts, in seconds since the session's first sample."""
    heard_until: float
    """A second reading's words up to this are the group's (past it, Whisper writes into silence)."""
    after_s: float
    """The previous group's words lie before this."""
    language: str | None
    prompt: str | None
    outcome: Outcome
    lookahead: Lookahead | None = None
    """A short group's: `audio` with the audio after it, once that is here."""


class FinalPass:
    """The audio and streamed words of the open group (and of the utterance going on), and its second reading."""

    def __init__(
        self,
        transcribe: Transcribe,
        window: FinalPassWindow,
        preroll_s: float,
        context_s: float,
        readings: SecondReadings | None = None,
        group_s: float = 12.0,
    ) -> None:
        self.transcribe = transcribe
        self.readings = readings or SecondReadings()
        self.window = window
        self.group_s = group_s
        self.keep = int(max(preroll_s, context_s) * SAMPLE_RATE)  # audio kept before the group
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0  # samples since the session's first
        self.group_from = 0.0  # seconds: the previous group's words lie before this
        self.last_final: list[str] = []  # the last final words' keys, to know them in the next reading
        self.streamed: list[SpokenWord] = []  # of the utterance going on
        self.group: list[SpokenWord] = []  # of the open group's ended utterances
        self.group_until = 0  # sample: where the open group's last utterance was cut
        self.read_until = 0  # sample: where its reading ends (the last voice's end, padded)
        self.heard_until = 0.0
        self.language: str | None = None
        self.prompt: str | None = None
        self.cleared = False  # the client dropped some of this audio: its streamed words are the transcript
        self.waiting = 0  # groups closed and not yet read again
        self.outcomes: Counter[Outcome] = Counter()
        self.lookaheads: list[Lookahead] = []  # short groups' readings waiting for the audio after them

    @property
    def end(self) -> int:
        return self.start + len(self.samples)

    @property
    def too_long(self) -> bool:
        return len(self.samples) > LONGEST_GROUP_S * SAMPLE_RATE

    @property
    def open_s(self) -> float:
        """The audio the open group's reading would read, context included (0 when it has no words)."""
        return (self.read_until - self.start) / SAMPLE_RATE if self.group else 0.0

    @property
    def gap_s(self) -> float:
        """Audio heard since the open group's last utterance was cut (0 when it has no words)."""
        return (self.end - self.group_until) / SAMPLE_RATE if self.group else 0.0

    def add(self, samples: np.ndarray) -> None:
        self.samples = np.concatenate([self.samples, samples])
        self._give_lookaheads(lambda lookahead: lookahead.until <= self.end)

    def flush(self) -> None:
        """No more audio is coming (the input ended, the client committed): short groups read what there is."""
        self._give_lookaheads(lambda _: True)

    def add_streamed(self, words: list[TimedWord], speakers: Sequence[int | None]) -> None:
        self.streamed += [SpokenWord(word, speaker) for word, speaker in zip(words, speakers, strict=True)]

    def clear(self) -> None:
        self.cleared = True

    def idle(self) -> None:
        """No speech and no word waiting: keep only what a next utterance's first word needs."""
        if not self.streamed and not self.group:
            self._cut(self.end - self.keep)

    def end_utterance(
        self, until: int, voiced_end: int, language: str | None, prompt: str | None = None, unread_tail: bool = False
    ) -> None:
        """The streamed words before `until` (samples since the session's first) end an utterance, which joins the
        open group; its reading ends where the voice did (`voiced_end`), padded as a file's chunk is: past it,
        Whisper writes "Thank you." into the silence. `prompt`: the session's vocabulary, as its streaming readings
        have it. `unread_tail`: the words after the last streamed one were not read (the end of input: the second
        reading writes them, see `will_read`)."""
        cut_s = until / SAMPLE_RATE
        read_until = self._read_until(voiced_end)
        words = self._streamed_before(until, voiced_end)
        self.streamed = [spoken for spoken in self.streamed if _middle(spoken.word) >= cut_s]
        self.group_until = until
        self.language, self.prompt = language, prompt
        if words:
            self.group += words
            self.read_until = max(self.read_until, read_until)
            self.heard_until = min(cut_s, read_until / SAMPLE_RATE)
            if not unread_tail:
                self.heard_until = min(self.heard_until, words[-1].word.end + SPAN_SLACK_S)
        elif not self.group:  # nothing to read: the audio before it is only context now
            self.group_from = max(self.group_from, cut_s)
            self._cut(until - self.keep)

    def close(self) -> Group | None:
        """The open group, to be read again (`settle`) or not, as `_second_readings.decide` says; None when it has
        no words. Closing is immediate: the reading runs beside the streaming."""
        if not self.group:
            return None
        outcome = decide(self.window, self.cleared, self.readings.load())
        self.readings.record(outcome)
        self.outcomes[outcome] += 1
        audio, lookahead = None, None
        if outcome is Outcome.READ:
            audio = self.samples[: self.read_until - self.start]
            self.waiting += 1
            if len(audio) < SHORT_GROUP_S * SAMPLE_RATE:
                until = self.read_until + int(LOOKAHEAD_S * SAMPLE_RATE)
                lookahead = Lookahead(audio, self.read_until, until)
                self.lookaheads.append(lookahead)
                self._give_lookaheads(lambda waiting: waiting.until <= self.end)  # already here
        group = Group(
            self.group,
            audio,
            self.start / SAMPLE_RATE,
            self.heard_until,
            self.group_from,
            self.language,
            self.prompt,
            outcome,
            lookahead,
        )
        self.group, self.cleared = [], False
        self.group_from = max(self.group_from, self.group_until / SAMPLE_RATE)
        self._cut(self.group_until - self.keep)
        return group

    def will_read(self, until: int, voiced_end: int) -> bool:
        """Whether, at the end of input or a commit, the group (with the utterance up to `until`) would be read
        again with its words not streamed yet: the channel then leaves them to that reading, rather than reading
        them first in a streaming reading of their own (the two one after the other were the session's last 3 s
        on a loaded CPU)."""
        has_words = bool(self.group or self._streamed_before(until, voiced_end))
        return has_words and tail_left_to_reading(self.window, self.cleared, self.readings.load())

    async def settle(self, group: Group, after: Awaitable[object] | None = None) -> list[SpokenWord]:
        """The group's final words: its second reading's, else its streamed ones. Groups are settled in the order
        they were closed: `after` is the last one's settling (see `read_again`)."""
        read = await self.read_again(group, after)
        words = group.streamed if read is None else with_speakers(read, group.streamed)
        self.settled(words)
        return words

    async def read_again(self, group: Group, after: Awaitable[object] | None = None) -> list[TimedWord] | None:
        """The group's words as its second reading writes them; None without one, or when the reading stopped
        early (far fewer words than were streamed). `after`, the last group's settling, is awaited once the
        reading is done: the two readings run side by side, and this one's context words are told from its own
        by the last one's final words."""
        if group.audio is None:
            if after is not None:
                await after
            return None
        try:
            reading = await self._reread(await self._audio_of(group), group)
        finally:
            self.waiting -= 1
        if after is not None:
            await after
        heard_until = group.heard_until
        if group.lookahead is not None:  # the words past its voice are the next group's
            heard_until = min(heard_until, group.lookahead.tail_from / SAMPLE_RATE)
        heard = [word for word in reading if _middle(word) < heard_until]
        read = heard[self._context_words(heard, group) :]
        return read if read and len(read) >= FEWEST_WORDS * len(group.streamed) else None

    def settled(self, words: list[SpokenWord]) -> None:
        """These are the group's final words: the next reading finds them in its context."""
        self.last_final = (self.last_final + [spoken.word.key for spoken in words])[-CONTEXT_WORDS:]

    def last_streamed_end(self) -> int:
        """Where a too long group ends: its last streamed word's end, else all of it."""
        return int(self.streamed[-1].word.end * SAMPLE_RATE) if self.streamed else self.end

    async def _audio_of(self, group: Group) -> np.ndarray:
        """What the group's reading reads: its audio, a short group's with the audio after it once that is here
        (or `LOOKAHEAD_WAIT_S` passed)."""
        assert group.audio is not None, "read_again: a group to read"
        lookahead = group.lookahead
        if lookahead is None:
            return group.audio
        try:
            await asyncio.wait_for(lookahead.ready.wait(), LOOKAHEAD_WAIT_S)
        except TimeoutError:
            self._give_lookaheads(lambda waiting: waiting is lookahead)
        return lookahead.audio

    def _give_lookaheads(self, due: Callable[[Lookahead], bool]) -> None:
        for lookahead in [waiting for waiting in self.lookaheads if due(waiting)]:
            lookahead.take(self.samples, self.start)
            self.lookaheads.remove(lookahead)

    def _read_until(self, voiced_end: int) -> int:
        return min(self.end, voiced_end + int(SPEECH_PAD_S * SAMPLE_RATE))

    def _streamed_before(self, until: int, voiced_end: int) -> list[SpokenWord]:
        """The streamed words before `until`, less those after the voice's end: Whisper writing "Thank you." into
        the silence a pause or a commit left (an utterance of only those stays empty, and they never end one,
        nor stretch its reading's span)."""
        last = min(until / SAMPLE_RATE, voiced_end / SAMPLE_RATE + SPAN_SLACK_S)
        return [spoken for spoken in self.streamed if _middle(spoken.word) < last]

    def _context_words(self, reading: list[TimedWord], group: Group) -> int:
        """How many of the first words read are the context's (the previous groups'): those before the pause by
        time, unless their text says otherwise. A reading moves words across a short pause (nexara's 220 ms),
        both ways, so the reading is aligned with the last final words followed by the group's streamed words:
        a word matched to a final one is context, a word matched to a streamed one is the group's, and only the
        words between the two are placed by time. A phrase said again is both in the final words and in the
        streamed ones, and is kept once on each side."""
        by_time = sum(1 for word in reading if _middle(word) < group.after_s)
        before, streamed = self.last_final, [spoken.word.key for spoken in group.streamed]
        aligned = SequenceMatcher(None, [word.key for word in reading], before + streamed, autojunk=False)
        pairs = [(a + i, b + i) for a, b, size in aligned.get_matching_blocks() for i in range(size)]
        last_context = max((a for a, b in pairs if b < len(before)), default=-1)
        first_own = min((a for a, b in pairs if b >= len(before)), default=len(reading))
        return min(max(by_time, last_context + 1), first_own)

    async def _reread(self, audio: np.ndarray, group: Group) -> list[TimedWord]:
        short = len(audio) < SHORT_GROUP_S * SAMPLE_RATE
        options = ChunkOptions(
            language=group.language,
            word_timestamps=True,
            segment_timestamps=False,
            encoder_window="audio" if self.window == "audio" or short else "full",
            prompt=group.prompt,
            shortest_window_s=SHORT_GROUP_WINDOW_S,
        )
        transcript = await self.transcribe(audio, options)
        offset = group.start_s
        return [TimedWord(w.word, w.start + offset, w.end + offset) for w in transcript.words if w.word.strip()]

    def _cut(self, sample: int) -> None:
        drop = min(max(0, sample - self.start), len(self.samples))
        if drop:  # a short group waiting for the audio after it reads what there is, rather than a gap
            self._give_lookaheads(lambda lookahead: lookahead.tail_from < self.start + drop)
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
