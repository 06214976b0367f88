"""The transcription pipeline, composed from DeploymentHandles: decode and cut into chunks, settle the
language, send the chunks to the (batching) Transcriber, and put their transcripts back on one timeline.

Synchronous routes and background jobs both call this; it holds no model code of its own.
"""

import asyncio
from collections.abc import Callable
from pathlib import Path

from ray.serve.handle import DeploymentHandle

from deployments.audio import AudioDecodeError
from deployments.types import (
    SAMPLE_RATE,
    ChunkOptions,
    ChunkTranscript,
    DecodedAudio,
    Diarization,
    DiarizationOptions,
    Segment,
    Transcript,
    TranscriptionOptions,
    Word,
)
from serve_app.config import ChunkingConfig, LimitsConfig, UrlInputConfig
from serve_app.schemas import DiarizedTranscription
from serve_app.speakers import diarized_transcription
from serve_app.url_fetch import check_url, fetch_to_file

ProgressCallback = Callable[[float], None]
"""Called with the share of the audio's chunks transcribed so far, 0.0 to 1.0."""


class AudioRejectedError(ValueError):
    """The audio cannot be processed; the message is the `detail` the client gets (HTTP 400)."""


class TranscriptionPipeline:
    def __init__(
        self,
        decoder: DeploymentHandle,
        transcriber: DeploymentHandle,
        diarizer: DeploymentHandle,
        limits: LimitsConfig,
        chunking: ChunkingConfig,
        url_input: UrlInputConfig | None = None,
    ) -> None:
        self.decoder = decoder
        self.transcriber = transcriber
        self.diarizer = diarizer
        self.limits = limits
        self.chunking = chunking
        self.url_input = url_input or UrlInputConfig()

    async def fetch(self, url: str, path: Path, max_bytes: int) -> None:
        """Download a client's `url` to `path` (raises UrlRejectedError with the reason)."""
        await fetch_to_file(url, path, max_bytes, self.url_input)

    async def check_url(self, url: str) -> None:
        """Refuse a URL that is malformed or resolves to a non-public address (UrlRejectedError)."""
        await check_url(url, self.url_input)

    async def decode(self, source: bytes | str) -> DecodedAudio:
        """Decode, cut into chunks, and enforce the duration limits."""
        try:
            audio: DecodedAudio = await self.decoder.decode.remote(source)
        except AudioDecodeError as error:  # Ray re-raises the replica's exception as a subclass of it
            raise AudioRejectedError(f"audio processing failed: {original_message(error)}") from None
        if audio.duration < self.limits.min_duration_s:
            raise AudioRejectedError(
                f"audio is too short ({audio.duration:.2f} s): the minimum is {self.limits.min_duration_s} s"
            )
        if audio.duration > self.limits.max_duration_s:
            raise AudioRejectedError(
                f"audio is too long ({audio.duration:.0f} s): the maximum is {self.limits.max_duration_s:.0f} s"
            )
        return audio

    async def run(
        self,
        source: bytes | str,
        options: TranscriptionOptions,
        diarization: DiarizationOptions | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Transcript | DiarizedTranscription:
        """Transcribe `source`; with `diarization`, also find who speaks when (concurrently, on the same
        decoded audio) and say who said each word."""
        if diarization is None:
            return await self.transcribe(source, options, on_progress)
        audio = await self.decode(source)
        transcript, turns = await asyncio.gather(
            self.transcribe_audio(audio, options.model_copy(update={"word_timestamps": True}), on_progress),
            self.diarizer.diarize.remote(audio.samples, diarization) if audio.chunks else _no_turns(),
        )
        return diarized_transcription(transcript, turns)

    async def transcribe(
        self, source: bytes | str, options: TranscriptionOptions, on_progress: ProgressCallback | None = None
    ) -> Transcript:
        return await self.transcribe_audio(await self.decode(source), options, on_progress)

    async def transcribe_audio(
        self, audio: DecodedAudio, options: TranscriptionOptions, on_progress: ProgressCallback | None = None
    ) -> Transcript:
        if not audio.chunks:  # silence: nothing to transcribe
            return Transcript(language=options.language or "en", duration=audio.duration, segments=[])
        in_flight = asyncio.Semaphore(self.chunking.max_chunks_in_flight)
        total_samples = sum(end - start for start, end in audio.chunks)
        done_samples = 0

        async def transcribe_chunk(index: int, chunk_options: ChunkOptions, report: bool = True) -> ChunkTranscript:
            nonlocal done_samples
            start, end = audio.chunks[index]
            async with in_flight:
                transcript = await self.transcriber.transcribe_chunk.remote(audio.samples[start:end], chunk_options)
            done_samples += end - start
            if report and on_progress is not None:
                on_progress(done_samples / total_samples)
            return transcript

        # Without a language, every chunk's language is detected in the encoder pass that decodes it (no
        # extra pass). The file's language is the one most of its speech is in; the rare chunk that came
        # out in another one is decoded again in it, so the transcript is in one language.
        chunk_options = ChunkOptions(**options.model_dump())
        transcripts = await asyncio.gather(*(transcribe_chunk(i, chunk_options) for i in range(len(audio.chunks))))
        language = options.language or main_language(transcripts, audio.chunks)
        settled = chunk_options.model_copy(update={"language": language})
        redo = [index for index, transcript in enumerate(transcripts) if transcript.language != language]
        redone = await asyncio.gather(*(transcribe_chunk(index, settled, report=False) for index in redo))
        for index, transcript in zip(redo, redone, strict=True):
            transcripts[index] = transcript
        return join_chunks(transcripts, audio, language)


async def _no_turns() -> Diarization:
    """No speech was found, so there is no one to find: silence diarizes to no speakers."""
    return Diarization(turns=[], exclusive_turns=[])


def main_language(transcripts: list[ChunkTranscript], chunks: tuple[tuple[int, int], ...]) -> str:
    """The language of the most speech (chunk samples), ties going to the earliest chunk's."""
    samples_per_language: dict[str, int] = {}
    for transcript, (start, end) in zip(transcripts, chunks, strict=True):
        samples_per_language[transcript.language] = samples_per_language.get(transcript.language, 0) + end - start
    return max(samples_per_language, key=samples_per_language.__getitem__)


def join_chunks(chunk_transcripts: list[ChunkTranscript], audio: DecodedAudio, language: str) -> Transcript:
    """One transcript on the audio's timeline: chunk times shifted by the chunk's start, ids renumbered.

    Whisper may put a last timestamp past the end of a chunk (into its padding); times are clamped to it.
    """
    segments: list[Segment] = []
    words: list[Word] = []
    for (start, end), chunk in zip(audio.chunks, chunk_transcripts, strict=True):
        offset, length = start / SAMPLE_RATE, (end - start) / SAMPLE_RATE
        for segment in chunk.segments:
            segments.append(
                segment.model_copy(
                    update={
                        "id": len(segments),
                        "seek": round(offset * 100),  # Whisper's seek counts 10 ms mel frames
                        "start": _on_timeline(segment.start, offset, length),
                        "end": _on_timeline(segment.end, offset, length),
                    }
                )
            )
        words.extend(
            word.model_copy(
                update={
                    "start": _on_timeline(word.start, offset, length),
                    "end": _on_timeline(word.end, offset, length),
                }
            )
            for word in chunk.words
        )
    return Transcript(language=language, duration=audio.duration, segments=segments, words=words)


def _on_timeline(seconds: float, chunk_offset: float, chunk_length: float) -> float:
    """A time within a chunk, clamped to the chunk, as seconds from the start of the file."""
    return round(chunk_offset + min(max(seconds, 0.0), chunk_length), 3)


def original_message(error: Exception) -> str:
    """The original message of an exception that may have crossed a Ray process boundary."""
    cause = getattr(error, "cause", None)
    return str(cause if isinstance(cause, Exception) else error)
