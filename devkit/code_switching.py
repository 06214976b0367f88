"""A code-switched recording (English, a pause, then German) spoken by espeak-ng, and the pipeline run on it
in-process with the real Whisper base engine standing in for the Transcriber deployment."""

import asyncio
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np

from deployments.config import ChunkingConfig, PipelineConfig, WhisperModelConfig
from deployments.files.decoding import decode_windows
from deployments.files.pipeline import TranscriptionPipeline
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import (
    SAMPLE_RATE,
    BatchHints,
    ChunkOptions,
    ChunkTranscript,
    PipelineRequest,
    Transcript,
    TranscriptionOptions,
)
from devkit.media import encode

ENGLISH = (
    "The weather in the mountains was cold this morning, so we stayed inside and read books by the fire."
    " In the afternoon the sun came out and we walked down to the lake, where children were feeding the ducks."
    " Later my brother cooked dinner for everyone, and we talked about the long journey home."
)
GERMAN = (
    "Am Abend sind wir in die Stadt gefahren und haben in einem kleinen Restaurant gegessen."
    " Das Essen war sehr gut, und der Kellner hat uns viel über die Geschichte der alten Brücke erzählt."
    " Morgen fahren wir mit dem Zug nach Hause, weil das Wetter schlechter wird."
)
PAUSE_S = 1.0


def espeak_ng() -> str | None:
    return shutil.which("espeak-ng")


def spoken(text: str, voice: str, folder: Path) -> np.ndarray:
    """`text` spoken by espeak-ng's `voice`, as 16 kHz samples."""
    path = folder / f"{voice}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(path), text], check=True)
    return np.concatenate(list(decode_windows(str(path))))


def code_switched(folder: Path) -> tuple[Path, float]:
    """A WAV of ENGLISH, a pause and GERMAN, and the time the German starts."""
    english, german = spoken(ENGLISH, "en", folder), spoken(GERMAN, "de", folder)
    pause = np.zeros(int(PAUSE_S * SAMPLE_RATE), np.float32)
    path = folder / "code_switched.wav"
    path.write_bytes(encode(np.concatenate([english, pause, german]), "wav"))
    return path, (len(english) + len(pause)) / SAMPLE_RATE


class _LocalMethod:
    """`handle.method.remote(...)` as on a Ray handle, awaiting `function` in this process."""

    def __init__(self, function: Callable[..., Awaitable[object]]) -> None:
        self.function = function

    async def remote(self, *args: object) -> object:
        return await self.function(*args)


class EngineTranscriber:
    """The Transcriber deployment's `transcribe_chunk`, answered by an engine in this process (one chunk a
    batch: the batching changes no word)."""

    def __init__(self, engine: CTranslate2Engine) -> None:
        self.engine = engine
        self.transcribe_chunk = _LocalMethod(self._transcribe)

    async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        return (await asyncio.to_thread(self.engine.transcribe_batch, [chunk], options))[0]


def base_engine(cpu_threads: int = 2) -> CTranslate2Engine:
    return CTranslate2Engine(WhisperModelConfig(model="embedded:base", cpu_threads=cpu_threads))


def transcribe(engine: CTranslate2Engine | EngineTranscriber, path: Path, language_per_chunk: bool) -> Transcript:
    """`path` through the pipeline's logic (VAD chunks, assembly) with `engine`, as a verbose_json request
    without a language."""
    transcriber = engine if isinstance(engine, EngineTranscriber) else EngineTranscriber(engine)
    config = PipelineConfig(chunking=ChunkingConfig(language_per_chunk=language_per_chunk))
    # A Serve deployment: the class itself is its `func_or_class`, built here without Serve.
    pipeline = TranscriptionPipeline.func_or_class(transcriber, None, config)  # type: ignore[attr-defined]
    request = PipelineRequest(source_path=str(path), max_bytes=1 << 31, options=TranscriptionOptions())
    result = asyncio.run(pipeline.transcribe(request))
    assert isinstance(result, Transcript)
    return result


def text_between(transcript: Transcript, start: float, end: float) -> str:
    """The text of the segments whose middle lies in [start, end)."""
    return "".join(s.text for s in transcript.segments if start <= (s.start + s.end) / 2 < end).strip()
