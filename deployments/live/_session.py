"""One live session: PCM in, final words (and speech and turn events) out, on the audio clock.

Per channel (`ChannelTranscriber`), audio goes into a buffer that starts at the last pause or cut. Silero
VAD marks speech; while someone speaks, Whisper reads the whole buffer again every `delay_ms` of new
audio, and LocalAgreement-2 makes final the words two readings agree on, or that ended `delay_ms` before
the end of the audio read. When speech ends (~280 ms of
silence) everything heard before the pause is final at once, and the buffer restarts there. A buffer longer
than `max_buffer_s` is cut at its last final sentence end (or last final word).

With `turn_detection=smart`, a pause also asks Smart Turn whether the turn is complete: if so the turn
ends there (`turn.end` with its probability); if not, it ends when speech has not resumed 3 s later, or at
the end of input. With `diarize`, each final word's voice is labelled by `OnlineSpeakers`.

The models are not here: the session gets three async callables (Whisper on the Transcriber, the speaker
encoder on the Diarizer, Smart Turn), so tests drive it with fakes.
"""

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import numpy as np

from deployments.config import LiveConfig
from deployments.live._audio import InvalidAudioError, PcmDecoder
from deployments.live._local_agreement import LocalAgreement, TimedWord
from deployments.live._smart_turn import COMPLETE
from deployments.live._speakers import OnlineSpeakers
from deployments.live._speech_activity import SpeechDetector
from deployments.live.events import (
    FRAME_MS,
    LiveEvent,
    LiveWord,
    SessionEnded,
    SessionFailed,
    SessionSettings,
    SpeechEnded,
    SpeechStarted,
    TranscriptEvent,
    TurnEnded,
)
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript

logger = logging.getLogger("ray.serve")

Transcribe = Callable[[np.ndarray, ChunkOptions], Awaitable[ChunkTranscript]]
EmbedVoices = Callable[[list[np.ndarray]], Awaitable[np.ndarray]]
TurnProbability = Callable[[np.ndarray], Awaitable[float]]


@dataclass(frozen=True)
class LiveModels:
    transcribe: Transcribe
    embed_voices: EmbedVoices
    turn_probability: TurnProbability


PREROLL_S = 0.3
"""Audio kept before speech starts, so its first word is whole."""
SILENT_TURN_END_S = 3.0
"""A turn Smart Turn judged unfinished ends after this much silence (the nexara protocol's limit)."""
SPEAKER_WINDOW_S = 1.5
"""Audio around a word's middle that its speaker embedding hears."""
LANGUAGE_AFTER_S = 3.0
"""The language detected on a reading of at least this much audio is kept for the rest of the session."""
LARGEST_STEP_S = 4.0
"""Audio that arrived at once (a client ahead of real time) is read in steps of at most this much, so the
buffer never outgrows what Whisper sees at once."""


def _ms(sample: int | float) -> int:
    return int(sample * 1000 // SAMPLE_RATE)


class ChannelTranscriber:
    def __init__(
        self,
        settings: SessionSettings,
        config: LiveConfig,
        models: LiveModels,
        emit: Callable[[LiveEvent], None],
        channel: int | None,
    ) -> None:
        self.settings = settings
        self.config = config
        self.models = models
        self.emit = emit
        self.channel = channel
        self.detector = SpeechDetector()
        self.agreement = LocalAgreement()
        self.speakers = OnlineSpeakers(config.speaker_threshold) if settings.diarize else None
        self.language: str | None = None  # detected on the first long enough reading, then kept
        self.smart = settings.turn_detection == "smart"
        self.buffer = np.zeros(0, dtype=np.float32)
        self.buffer_start = 0  # samples since the session's first
        self.received = 0
        self.last_reading = 0  # `received` when Whisper last read the buffer
        self.last_word_end_ms = 0
        self.final_words: list[TimedWord] = []  # final words still inside the buffer
        self.texts: list[str] = []
        self.turn = 0
        self.turn_open = False
        self.turn_start = 0
        self.turn_words: list[LiveWord] = []
        self.turn_texts: list[str] = []
        self.unfinished_turn: tuple[int, float] | None = None  # (speech end, Smart Turn's probability)
        self.recent = np.zeros(0, dtype=np.float32)  # the last 8 s, for Smart Turn and speaker windows
        self.recent_start = 0

    @property
    def text(self) -> str:
        return "".join(self.texts).strip()

    async def feed(self, samples: np.ndarray) -> None:
        step = int(LARGEST_STEP_S * SAMPLE_RATE)
        for offset in range(0, len(samples), step):
            await self._feed_step(samples[offset : offset + step])

    async def _feed_step(self, samples: np.ndarray) -> None:
        self.buffer = np.concatenate([self.buffer, samples])
        self.received += len(samples)
        self._remember(samples)
        for boundary in self.detector.feed(samples):
            if boundary.kind == "start":
                self._speech_started(boundary.sample)
            else:
                await self._speech_ended(boundary.sample)
        if self.unfinished_turn is not None:
            end, probability = self.unfinished_turn
            if self.received - end >= SILENT_TURN_END_S * SAMPLE_RATE:
                self._end_turn(end, probability)
        if self.detector.speaking or self.agreement.previous:
            if self.received - self.last_reading >= self.settings.delay_ms * SAMPLE_RATE // 1000:
                await self._read()
        else:
            self._cut(max(self.buffer_start, self.received - int(PREROLL_S * SAMPLE_RATE)))

    async def finish(self) -> None:
        """End of input: everything heard is final, and an open turn ends without a verdict."""
        if self.detector.speaking or self.agreement.previous:
            await self._publish(self.agreement.commit_through(await self._hypothesis(), math.inf))
        if self.smart and (self.turn_open or self.turn_words):
            if self.detector.speaking:
                self.emit(SpeechEnded(turn=self.turn, end=_ms(self.detector.last_voiced_end), channel=self.channel))
            self._end_turn(self.detector.last_voiced_end, None)

    def _speech_started(self, sample: int) -> None:
        if self.unfinished_turn is not None and sample - self.unfinished_turn[0] >= SILENT_TURN_END_S * SAMPLE_RATE:
            self._end_turn(*self.unfinished_turn)  # the silence limit passed within audio read in one step
        self.unfinished_turn = None
        if not self.smart:
            return
        if not self.turn_open:
            self.turn_open, self.turn_start = True, sample
        self.emit(SpeechStarted(turn=self.turn, start=_ms(sample), channel=self.channel))

    async def _speech_ended(self, sample: int) -> None:
        if self.smart:
            self.emit(SpeechEnded(turn=self.turn, end=_ms(sample), channel=self.channel))
        await self._publish(self.agreement.commit_through(await self._hypothesis(), sample / SAMPLE_RATE))
        self._cut(max(self.buffer_start, sample - int(PREROLL_S * SAMPLE_RATE)))
        if self.smart and self.turn_open:
            probability = await self.models.turn_probability(self._turn_audio(sample))
            if probability >= COMPLETE:
                self._end_turn(sample, probability)
            else:
                self.unfinished_turn = (sample, probability)

    async def _read(self) -> None:
        self.last_reading = self.received
        settled_before = (self.received - self.settings.delay_ms * SAMPLE_RATE // 1000) / SAMPLE_RATE
        await self._publish(self.agreement.update(await self._hypothesis(), settled_before))
        if len(self.buffer) > self.config.max_buffer_s * SAMPLE_RATE:
            await self._trim()

    async def _trim(self) -> None:
        """Cut a long buffer at its last final sentence end, else at its last final word; with nothing final
        (Whisper keeps changing its mind), all but the last 5 s becomes final first."""
        ends = [word.end for word in self.final_words if word.text.rstrip().endswith((".", "?", "!"))]
        cut = ends[-1] if ends and ends[-1] - self.buffer_start / SAMPLE_RATE > 2 else self.agreement.final_until
        if cut * SAMPLE_RATE <= self.buffer_start + SAMPLE_RATE:
            until = (self.received - 5 * SAMPLE_RATE) / SAMPLE_RATE
            await self._publish(self.agreement.commit_through(await self._hypothesis(), until))
            cut = max(self.agreement.final_until, until)
        self._cut(int(cut * SAMPLE_RATE))

    async def _hypothesis(self) -> list[TimedWord]:
        if len(self.buffer) < SAMPLE_RATE // 10:
            return []
        options = ChunkOptions(language=self.language, word_timestamps=True, segment_timestamps=False, beam_size=1)
        transcript = await self.models.transcribe(self.buffer, options)
        if self.language is None and len(self.buffer) >= LANGUAGE_AFTER_S * SAMPLE_RATE:
            self.language = transcript.language
        offset = self.buffer_start / SAMPLE_RATE
        return [TimedWord(w.word, w.start + offset, w.end + offset) for w in transcript.words if w.word.strip()]

    async def _publish(self, words: list[TimedWord]) -> None:
        """Final words out, as `transcript` events of one speaker each."""
        if not words:
            return
        if self.smart and not self.turn_open:  # speech too faint for the VAD still opens a turn
            self._speech_started(int(words[0].start * SAMPLE_RATE))
        self.final_words += words
        speakers = await self._speakers(words)
        groups: list[tuple[int | None, list[TimedWord], list[LiveWord]]] = []
        for word, speaker in zip(words, speakers, strict=True):
            live = self._live_word(word, speaker)
            if groups and groups[-1][0] == speaker:
                groups[-1][1].append(word)
                groups[-1][2].append(live)
            else:
                groups.append((speaker, [word], [live]))
        for speaker, timed, live_words in groups:
            text = "".join(word.text for word in timed)
            self.texts.append(text)
            self.turn_texts.append(text)
            self.turn_words += live_words
            self.emit(
                TranscriptEvent(
                    text=text,
                    words=live_words,
                    speaker=speaker,
                    channel=self.channel,
                    turn=self.turn if self.smart else None,
                )
            )

    def _live_word(self, word: TimedWord, speaker: int | None) -> LiveWord:
        """Times on the 80 ms grid, never before the previous word's end."""
        start = max(round(word.start * 1000 / FRAME_MS) * FRAME_MS, self.last_word_end_ms)
        end = max(round(word.end * 1000 / FRAME_MS) * FRAME_MS, start + FRAME_MS)
        self.last_word_end_ms = end
        return LiveWord(text=word.text.strip(), start=start, end=end, speaker=speaker)

    async def _speakers(self, words: list[TimedWord]) -> list[int | None]:
        if self.speakers is None:
            return [None] * len(words)
        half = int(SPEAKER_WINDOW_S * SAMPLE_RATE / 2)
        windows = []
        for word in words:  # from the last 8 s heard, which a cut of the buffer at a pause does not shorten
            middle = int((word.start + word.end) / 2 * SAMPLE_RATE) - self.recent_start
            lo, hi = max(0, middle - half), min(len(self.recent), middle + half)
            windows.append(self.recent[lo:hi] if hi - lo >= SAMPLE_RATE // 2 else None)
        usable = [window for window in windows if window is not None]
        embeddings: Iterator[np.ndarray] = iter(await self.models.embed_voices(usable) if usable else [])
        labels: list[int | None] = []
        for window in windows:
            label = self.speakers.assign(next(embeddings)) if window is not None else None
            labels.append(label if label is not None else (labels[-1] if labels else None))
        return labels

    def _end_turn(self, end: int, confidence: float | None) -> None:
        self.unfinished_turn = None
        if not self.turn_open and not self.turn_words:
            return
        self.emit(
            TurnEnded(
                turn=self.turn,
                start=_ms(self.turn_start),
                end=max(_ms(end), _ms(self.turn_start)),
                confidence=None if confidence is None else round(confidence, 4),
                text="".join(self.turn_texts).strip(),
                words=self.turn_words,
                channel=self.channel,
            )
        )
        self.turn += 1
        self.turn_open, self.turn_words, self.turn_texts = False, [], []

    def _cut(self, sample: int) -> None:
        """Drop the buffer's audio before `sample`."""
        drop = min(max(0, sample - self.buffer_start), len(self.buffer))
        if drop:
            self.buffer = self.buffer[drop:]
            self.buffer_start += drop
            self.final_words = [word for word in self.final_words if word.end * SAMPLE_RATE > self.buffer_start]

    def _remember(self, samples: np.ndarray) -> None:
        keep = 8 * SAMPLE_RATE
        self.recent = np.concatenate([self.recent, samples])
        if len(self.recent) > keep:
            self.recent_start += len(self.recent) - keep
            self.recent = self.recent[-keep:]

    def _turn_audio(self, end: int) -> np.ndarray:
        """The turn's audio up to `end` (its last 8 s at most), with a little before its first speech."""
        start = max(self.recent_start, self.turn_start - int(PREROLL_S * SAMPLE_RATE))
        return self.recent[max(0, start - self.recent_start) : max(0, end - self.recent_start)]


class LiveSession:
    """A session's channels, fed from an inbox of raw PCM frames by one task; events come out of `events`."""

    def __init__(self, settings: SessionSettings, config: LiveConfig, models: LiveModels) -> None:
        self.settings = settings
        self.config = config
        self.decoder = PcmDecoder(settings)
        self.outbox: asyncio.Queue[LiveEvent | None] = asyncio.Queue()
        multichannel = settings.channels_transcribed > 1
        self.channels = [
            ChannelTranscriber(settings, config, models, self.outbox.put_nowait, index if multichannel else None)
            for index in range(settings.channels_transcribed)
        ]
        self.inbox: asyncio.Queue[list[np.ndarray] | None] = asyncio.Queue()
        self.queued_samples = 0
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
        return None

    def end_input(self) -> None:
        if not self.input_ended:
            self.input_ended = True
            self.inbox.put_nowait(None)

    async def events(self) -> AsyncIterator[LiveEvent]:
        """Every event until the session ends; the last is `session.ended` or `error`."""
        while (event := await self.outbox.get()) is not None:
            yield event

    async def close(self) -> None:
        self.worker.cancel()
        await asyncio.gather(self.worker, return_exceptions=True)

    def _fail(self, failure: SessionFailed) -> SessionFailed:
        self.input_ended = True
        self.worker.cancel()
        return failure

    async def _run(self) -> None:
        try:
            while True:
                frames = [await self.inbox.get()]
                while not self.inbox.empty():  # catch up on everything that arrived meanwhile in one step
                    frames.append(self.inbox.get_nowait())
                ended = frames[-1] is None
                frames = [frame for frame in frames if frame is not None]
                if frames:
                    per_channel = [np.concatenate(parts) for parts in zip(*frames, strict=True)]
                    await asyncio.gather(*(ch.feed(s) for ch, s in zip(self.channels, per_channel, strict=True)))
                    self.queued_samples -= len(per_channel[0])
                if ended:
                    break
            tails = self.decoder.flush()
            await asyncio.gather(*(ch.feed(s) for ch, s in zip(self.channels, tails, strict=True) if len(s)))
            await asyncio.gather(*(channel.finish() for channel in self.channels))
            self.outbox.put_nowait(self._ended())
        except asyncio.CancelledError:
            pass
        except Exception as error:  # a model call failed: the client gets an error frame and 1011
            logger.exception("live session failed")
            self.outbox.put_nowait(SessionFailed(code="internal", message=f"transcription failed: {error}"))
        finally:
            self.outbox.put_nowait(None)

    def _ended(self) -> SessionEnded:
        duration = self.decoder.duration_ms
        texts = [channel.text for channel in self.channels]
        return SessionEnded(
            audio_duration_ms=duration,
            channels_transcribed=self.settings.channels_transcribed,
            billed_ms=duration * self.settings.channels_transcribed,
            text=texts if self.settings.multichannel else texts[0],
        )
