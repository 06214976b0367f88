"""One channel of a live session (`deployments/live/_channel.py`) driven in this process by a real engine, 100 ms
frames at a time, each reading waiting for Whisper: the streaming policy (buffer, context, LocalAgreement, second
readings) without the service or the machine's capacity. A second reading runs beside the streaming (a task);
here it runs before the next frame is fed, as on a machine that keeps up. Used by `scripts/bench_live_words.py`
and the component test of the default model's finals."""

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from deployments.config import LiveConfig
from deployments.files._chunking import SpeechChunker, chunk_audio
from deployments.live._channel import ChannelTranscriber
from deployments.live._models import Emitted, LiveModels
from deployments.live._second_readings import Outcome
from deployments.live.events import SessionSettings, TranscriptEvent
from deployments.transcriber.engines.base import WhisperEngine
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, ComputeSeconds

FRAME = SAMPLE_RATE // 10


@dataclass(frozen=True)
class Reading:
    """One streaming reading: the buffer it read, the words it wrote and what it cost."""

    audio_s: float
    words: int
    compute: ComputeSeconds


@dataclass
class Streamed:
    streamed: str = ""
    final: str = ""
    waits: list[float] = field(default_factory=list)
    """How much audio each streamed word waited for (s)."""
    second_s: list[float] = field(default_factory=list)
    """Compute time of each utterance's second reading (s)."""
    compute_s: float = 0.0
    streaming: ComputeSeconds = field(default_factory=ComputeSeconds)
    """Engine seconds of the streaming readings, by stage."""
    readings: list[Reading] = field(default_factory=list)
    """Every streaming reading, in order."""
    second: ComputeSeconds = field(default_factory=ComputeSeconds)
    """Engine seconds of the second readings, by stage."""
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    """What became of the groups of utterances."""


def file_compute(engine: WhisperEngine, samples: np.ndarray) -> ComputeSeconds:
    """What reading the recording as a file costs: its VAD chunks, the file path's options (`json`, beam 5)."""
    spent = ComputeSeconds()
    for pieces in SpeechChunker(use_vad=True).chunks(samples):
        (transcript,) = engine.transcribe_batch([chunk_audio(samples, pieces)], ChunkOptions(segment_timestamps=False))
        spent += transcript.compute
    return spent


async def stream(
    engine: WhisperEngine, samples: np.ndarray, config: LiveConfig, settings: SessionSettings, slowdown: float = 1.0
) -> Streamed:
    """The session's streamed and final texts, the waits and the readings' compute time. `slowdown`: each reading
    is answered that many times later than it took (a loaded CPU or a Transcriber shared by other sessions), so
    that the channel's pace (`_pace.py`) sees the machine a user meets under load."""
    run = Streamed()
    heard = 0  # samples fed when the current events were made
    streamed: list[str] = []

    async def transcribe(chunk: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        started = time.perf_counter()
        (transcript,) = engine.transcribe_batch([chunk], options)
        took = time.perf_counter() - started
        await asyncio.sleep((slowdown - 1) * took)
        run.compute_s += took
        if options.beam_size is None:  # a second reading: streaming reads greedily
            run.second_s.append(took)
            run.second += transcript.compute
        else:
            run.streaming += transcript.compute
            run.readings.append(Reading(len(chunk) / SAMPLE_RATE, len(transcript.words), transcript.compute))
        return transcript

    async def no_voices(windows: list[np.ndarray]) -> np.ndarray:
        return np.zeros((len(windows), 1))

    async def no_turns(audio: np.ndarray) -> float:
        return 0.0

    pending: list[Emitted] = []  # events on their way: the end of input's last words come from its reading

    def emit(event: Emitted) -> None:
        if isinstance(event, TranscriptEvent):
            streamed.append(event.text)
            run.waits.extend(heard / SAMPLE_RATE - word.end / 1000 for word in event.words)
        elif isinstance(event, asyncio.Task):
            pending.append(event)

    models = LiveModels(transcribe, no_voices, no_turns)
    channel = ChannelTranscriber(settings, config, models, emit, None)
    for offset in range(0, len(samples), FRAME):
        heard = min(len(samples), offset + FRAME)
        await channel.feed(samples[offset : offset + FRAME])
        await asyncio.sleep(0)  # the second readings started run now (their Whisper calls never suspend)
    await channel.finish()
    for task in pending:
        ready = await task if isinstance(task, asyncio.Task) else task
        for event in ready if isinstance(ready, list) else [ready]:
            emit(event)
    run.streamed, run.final = "".join(streamed).strip(), channel.text
    run.outcomes = channel.final.outcomes
    return run
