"""A live channel's turns: which speech and words belong to which turn, and when it ends.

A turn opens when speech starts (or when final words arrive that the VAD heard too faintly to call speech).
With `turn_detection=smart`, at each pause Smart Turn judges from the turn's audio whether it is complete: if
so the turn ends there (`turn.end` with its probability); if not, it ends when speech has not resumed 3 s
later, or at the end of input (without a probability). With `vad` every pause ends the turn (OpenAI's server
VAD); with `manual` only the client's commit does (OpenAI's `input_audio_buffer.commit`), and a commit ends
the open turn in every mode. Turns are numbered 0, 1, ... per channel. Without turn detection, nothing here
emits an event. A turn's `turn.end` carries its utterances' final transcripts, so it is sent once their second
readings are done (`_final_pass.py`); the events after it wait in line.
"""

import asyncio
from collections.abc import Callable

from deployments.live._buffer import PREROLL_S, RecentAudio
from deployments.live._models import Emit, FinalWords, TurnProbability
from deployments.live._smart_turn import COMPLETE
from deployments.live.events import LiveEvent, SpeechEnded, SpeechStarted, TurnDetection, TurnEnded
from deployments.types import SAMPLE_RATE

SILENT_TURN_END_S = 3.0
"""A turn Smart Turn judged unfinished ends after this much silence (the nexara protocol's limit)."""


def _ms(sample: int | float) -> int:
    return int(sample * 1000 // SAMPLE_RATE)


class TurnTracker:
    def __init__(
        self,
        mode: TurnDetection,
        turn_probability: TurnProbability,
        recent: RecentAudio,
        emit: Emit,
        channel: int | None,
    ) -> None:
        self.smart = mode == "smart"
        self.mode = mode
        self.tracking = mode != "none"
        self.turn_probability = turn_probability
        self.recent = recent
        self.emit = emit
        self.channel = channel
        self.number = 0
        self.open = False
        self.start = 0  # where the open turn's speech started, in samples since the session's first
        self.finals: list[asyncio.Task[FinalWords]] = []  # the turn's groups' final transcripts
        self.before_end: Callable[[], None] = lambda: None
        """Called as a turn ends, before its `turn.end` is made: the channel closes the turn's group there."""
        self.unfinished: tuple[int, float] | None = None  # (speech end, Smart Turn's probability)

    @property
    def current(self) -> int | None:
        """The turn final words belong to; None without turn detection."""
        return self.number if self.tracking else None

    def speech_started(self, sample: int) -> None:
        if self.unfinished is not None and sample - self.unfinished[0] >= SILENT_TURN_END_S * SAMPLE_RATE:
            self._end(*self.unfinished)  # the silence limit passed within audio read in one step
        self.unfinished = None
        if not self.tracking:
            return
        if not self.open:
            self.open, self.start = True, sample
        self.emit(SpeechStarted(turn=self.number, start=_ms(sample), channel=self.channel))

    def speech_ended(self, sample: int) -> None:
        if self.tracking:
            self.emit(SpeechEnded(turn=self.number, end=_ms(sample), channel=self.channel))

    async def judge(self, end: int) -> None:
        """At a pause: the open turn ends if Smart Turn finds it complete, else it waits for speech to resume
        (`smart`); it ends at once with `vad`, and not at all with `manual`."""
        if self.mode == "vad" and self.open:
            return self._end(end, None)
        if not (self.smart and self.open):
            return
        speech = self.recent.between(self.start - int(PREROLL_S * SAMPLE_RATE), end)  # and a little before it
        probability = await self.turn_probability(speech)
        if probability >= COMPLETE:
            self._end(end, probability)
        else:
            self.unfinished = (end, probability)

    def heard_until(self, sample: int) -> None:
        """Audio has arrived up to `sample`: an unfinished turn ends once that is 3 s past its speech."""
        if self.unfinished is not None:
            end, probability = self.unfinished
            if sample - end >= SILENT_TURN_END_S * SAMPLE_RATE:
                self._end(end, probability)

    def words_final(self, start: int) -> None:
        """Final words from `start` on: speech too faint for the VAD still opens a turn."""
        if self.tracking and not self.open:
            self.speech_started(start)

    def add(self, final: asyncio.Task[FinalWords]) -> None:
        """A group of the open turn, whose final transcript (its second reading) may still be on its way."""
        if self.tracking:
            self.finals.append(final)

    def input_ended(self, speaking: bool, last_voiced_end: int) -> None:
        """An open turn ends without a verdict (its speech first, if it was still going)."""
        if self.tracking and (self.open or self.finals):
            if speaking:
                self.speech_ended(last_voiced_end)
            self._end(last_voiced_end, None)

    def committed(self, end: int) -> None:
        """The client committed the audio up to `end`: the open turn ends there, and a `turn.end` (empty when
        nothing was heard) answers the commit. Speech going on opens the next turn when the VAD hears it."""
        if not self.tracking:
            return
        if not self.open and not self.finals:
            self.open, self.start = True, end
        self._end(end, None)

    def _end(self, end: int, confidence: float | None) -> None:
        self.unfinished = None
        self.before_end()
        if not self.open and not self.finals:
            return
        ended = TurnEnded(
            turn=self.number,
            start=_ms(self.start),
            end=max(_ms(end), _ms(self.start)),
            confidence=None if confidence is None else round(confidence, 4),
            text="",
            words=[],
            channel=self.channel,
        )
        self.emit(asyncio.create_task(_with_transcript(ended, self.finals)) if self.finals else ended)
        self.number += 1
        self.open, self.finals = False, []


async def _with_transcript(ended: TurnEnded, finals: list[asyncio.Task[FinalWords]]) -> LiveEvent:
    """The turn's end once its groups' final transcripts are read."""
    transcripts = [await final for final in finals]
    text = "".join(text for text, _ in transcripts).strip()
    return ended.model_copy(update={"text": text, "words": [word for _, words in transcripts for word in words]})
