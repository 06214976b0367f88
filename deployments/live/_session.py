"""One live session: PCM in, final words (and speech and turn events) out, on the audio clock.

Frames are decoded here and split into channels, each transcribed on its own by a `ChannelTranscriber`
(`_channel.py`); the events of all of them go out in one stream, which ends with `session.ended` (or `error`).
The models are not here: the session gets three async callables (`LiveModels`), so tests drive it with fakes.
"""

import asyncio
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from typing import Literal

import numpy as np

from deployments.config import LiveConfig
from deployments.errors import InputRejectedError
from deployments.live._audio import InvalidAudioError, PcmDecoder
from deployments.live._channel import ChannelTranscriber
from deployments.live._models import Emitted, LiveModels
from deployments.live._redaction import LiveRedaction
from deployments.live._second_readings import Outcome, ReplicaLoad, SecondReadings
from deployments.live.events import LiveEvent, SessionEnded, SessionFailed, SessionSettings
from deployments.redaction.redactor import Redactor
from deployments.types import SAMPLE_RATE

logger = logging.getLogger("ray.serve")

Mark = Literal["commit", "clear"]
"""A client's word about the audio sent before it (`LiveSession.mark`), applied in order with the audio."""


class LiveSession:
    """A session's channels, fed from an inbox of raw PCM frames by one task; events come out of `events`."""

    def __init__(
        self,
        settings: SessionSettings,
        config: LiveConfig,
        models: LiveModels,
        readings: SecondReadings | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """`readings`: the replica's, shared by its sessions; else the session's own. `redactor`: the session's
        `redaction`, applied to every event before it leaves (`_redaction.py`)."""
        self.settings = settings
        self.config = config
        self.decoder = PcmDecoder(settings)
        self.outbox: asyncio.Queue[Emitted | None] = asyncio.Queue()
        multichannel = settings.channels_transcribed > 1
        readings = readings or SecondReadings(lambda: ReplicaLoad(self.behind_s, self.waiting))
        self.channels = [
            ChannelTranscriber(
                settings, config, models, self.outbox.put_nowait, index if multichannel else None, readings
            )
            for index in range(settings.channels_transcribed)
        ]
        self.redaction = None if redactor is None else LiveRedaction(redactor, self._language_of)
        self.inbox: asyncio.Queue[list[np.ndarray] | Mark | None] = asyncio.Queue()
        self.queued_samples = 0
        self.pushed = 0  # samples (per channel) pushed so far
        self.arrivals: deque[tuple[float, int]] = deque()  # each frame not yet taken in: when it came, where it ends
        self.input_ended = False
        self.worker = asyncio.create_task(self._run())

    def push(self, frame: bytes) -> SessionFailed | None:
        """Take one binary frame; a failure ends the session (the caller sends it and closes)."""
        if self.input_ended:
            return None
        try:
            samples = self.decoder.decode(frame)
        except InvalidAudioError as error:
            return self._fail(SessionFailed(code="invalid_audio", message=str(error)))
        self.queued_samples += len(samples[0])
        if self.queued_samples > self.config.max_backlog_s * SAMPLE_RATE:
            message = (
                f"more than {self.config.max_backlog_s:g} s of audio is waiting to be transcribed:"
                " send audio no faster than real time"
            )
            return self._fail(SessionFailed(code="audio_backlog", message=message))
        self.inbox.put_nowait(samples)
        self.pushed += len(samples[0])
        self.arrivals.append((time.monotonic(), self.pushed))
        return None

    def mark(self, mark: Mark) -> None:
        """Commit or clear the audio pushed so far, once it is transcribed."""
        if not self.input_ended:
            self.inbox.put_nowait(mark)

    def end_input(self) -> None:
        if not self.input_ended:
            self.input_ended = True
            self.inbox.put_nowait(None)

    async def events(self) -> AsyncIterator[LiveEvent]:
        """Every event until the session ends, in order (an event still on its way holds back those after
        it); the last is `session.ended` or `error`. With a redaction, redacted (words held while an entity may
        be forming)."""
        async for event in self._events():
            if self.redaction is None:
                yield event
                continue
            try:
                redacted = await self.redaction.process(event)
            except InputRejectedError as refused:  # a named-entity class, and the speech is not English
                yield SessionFailed(code="invalid_config", message=str(refused))
                return
            for out in redacted:
                yield out

    def _language_of(self, channel: int | None) -> str | None:
        return self.channels[channel or 0].language

    async def _events(self) -> AsyncIterator[LiveEvent]:
        while (item := await self.outbox.get()) is not None:
            if not isinstance(item, asyncio.Task):
                yield item
                continue
            try:
                ready = await item
            except Exception as error:  # a second reading failed
                yield _failed(error)
                return
            for event in ready if isinstance(ready, list) else [ready]:
                yield event

    async def close(self) -> None:
        self.worker.cancel()
        for channel in self.channels:
            channel.close()
        while not self.outbox.empty():  # events nobody will read: stop or collect the ones still on their way
            if isinstance(item := self.outbox.get_nowait(), asyncio.Task):
                item.cancel()
                await asyncio.gather(item, return_exceptions=True)
        await asyncio.gather(self.worker, return_exceptions=True)
        self.outbox.put_nowait(None)  # a reader still waiting (its caller gone) ends

    @property
    def behind_s(self) -> float:
        """How long ago the oldest audio its channels have not taken in yet arrived: how late its words will be.
        Counted from the channels' progress, not from what the session handed them: a pause's last reading, then
        its turn's verdict, may take a base session on two cores 2 s, during which the audio handed over with the
        pause already had its reading (it is what was read), and counting it made one of jfk's four turns keep its
        streamed words alone on a replica. Wall time, not audio: a client sending faster than real time (a
        recording streamed at 2x) has more audio waiting than a speaker does, without its words coming later than
        the machine reads."""
        self._forget_taken()
        return time.monotonic() - self.arrivals[0][0] if self.arrivals else 0.0

    @property
    def waiting(self) -> int:
        """Groups of utterances waiting for their second reading."""
        return sum(channel.final.waiting for channel in self.channels)

    @property
    def second_readings(self) -> Counter[Outcome]:
        """What became of its groups of utterances: read again, or why not."""
        return sum((channel.final.outcomes for channel in self.channels), Counter())

    def _fail(self, failure: SessionFailed) -> SessionFailed:
        self.input_ended = True
        self.worker.cancel()
        return failure

    async def _run(self) -> None:
        try:
            ended = False
            while not ended:
                items = [await self.inbox.get()]
                while not self.inbox.empty():  # catch up on everything that arrived meanwhile in one step
                    items.append(self.inbox.get_nowait())
                frames: list[list[np.ndarray]] = []
                for item in items:
                    if isinstance(item, list):
                        frames.append(item)
                        continue
                    await self._feed(frames)  # the audio before a mark or the end first
                    frames = []
                    if item is None:
                        ended = True
                        break
                    await self._apply(item)
                await self._feed(frames)
            tails = self.decoder.flush()
            await asyncio.gather(*(ch.feed(s) for ch, s in zip(self.channels, tails, strict=True) if len(s)))
            await asyncio.gather(*(channel.finish() for channel in self.channels))
            self.outbox.put_nowait(self._ended())
        except asyncio.CancelledError:
            pass
        except Exception as error:  # a model call failed: the client gets an error frame and 1011
            self.outbox.put_nowait(_failed(error))
        finally:
            self.outbox.put_nowait(None)

    async def _feed(self, frames: list[list[np.ndarray]]) -> None:
        if frames:
            per_channel = [np.concatenate(parts) for parts in zip(*frames, strict=True)]
            await asyncio.gather(*(ch.feed(s) for ch, s in zip(self.channels, per_channel, strict=True)))
            self.queued_samples -= len(per_channel[0])
            self._forget_taken()

    def _forget_taken(self) -> None:
        taken = min(channel.received for channel in self.channels)
        while self.arrivals and self.arrivals[0][1] <= taken:
            self.arrivals.popleft()

    async def _apply(self, mark: Mark) -> None:
        if mark == "commit":
            await asyncio.gather(*(channel.commit() for channel in self.channels))
        else:
            for channel in self.channels:
                channel.clear()

    def _ended(self) -> SessionEnded:
        duration = self.decoder.duration_ms
        texts = [channel.text for channel in self.channels]
        return SessionEnded(
            audio_duration_ms=duration,
            channels_transcribed=self.settings.channels_transcribed,
            billed_ms=duration * self.settings.channels_transcribed,
            text=texts if self.settings.multichannel else texts[0],
        )


def _failed(error: Exception) -> SessionFailed:
    """A model call failed (called where it was caught, so the log holds its traceback)."""
    logger.exception("live session failed")
    return SessionFailed(code="internal", message=f"transcription failed: {error}")
