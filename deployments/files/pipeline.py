"""TranscriptionPipeline: the deployment through which all audio flows, one way.

    spooled file (or URL) -> decode a window at a time -> VAD chunks -> Transcriber (batched)
                                       \\-> decoded 16 kHz spool -> Diarizer (reads the file itself)
                                                                 -> transcript back to the caller

The Ingress and the JobTracker send a `PipelineRequest` (a path and options) and get a domain result
back: neither ever holds decoded samples or the upload's bytes. This replica holds one decoded window,
the unfinished chunk and at most `max_chunks_in_flight` chunks on their way to the Transcriber, so its
memory does not grow with the file's length.
"""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.config import PipelineConfig
from deployments.diarization.words import diarized_transcription
from deployments.errors import AudioRejectedError
from deployments.files._chunking import (
    Chunk,
    Pieces,
    SpeechChunker,
    StreamingChunker,
    chunk_audio,
    file_time,
    speech_samples,
)
from deployments.files._decode import declared_duration, decode_windows, too_long
from deployments.files._profanity import mask_text, mask_transcript
from deployments.files._url_fetch import check_url, fetch_to_file
from deployments.retry import retry_on_worker_loss
from deployments.storage.spool import decoded_copy_path
from deployments.types import (
    SAMPLE_RATE,
    ChunkOptions,
    ChunkTranscript,
    Diarization,
    DiarizationOptions,
    PipelineProgress,
    PipelineRequest,
    PipelineResult,
    PipelineText,
    Segment,
    Transcript,
    Word,
)

logger = logging.getLogger("ray.serve")

PipelineEvent = PipelineProgress | PipelineText | PipelineResult


@serve.deployment(max_ongoing_requests=32)
class TranscriptionPipeline:
    """Decoding and VAD are CPU work apart from the model, so this deployment scales on its own; it
    spends the rest of its time awaiting the Transcriber and the Diarizer."""

    def __init__(self, transcriber: DeploymentHandle, diarizer: DeploymentHandle, config: PipelineConfig) -> None:
        self.transcriber = transcriber
        self.diarizer = diarizer
        self.config = config
        chunking = config.chunking
        self.chunker = SpeechChunker(chunking.vad_filter, chunking.max_chunk_s, chunking.max_span_s)
        self.files_decoding = {True: 0, False: 0}  # files being decoded now, interactive (True) or jobs'

    async def check_url(self, url: str) -> None:
        """Refuse a URL now if it is malformed or resolves to a non-public address (UrlRejectedError)."""
        await check_url(url, self.config.url_input)

    async def transcribe(self, request: PipelineRequest) -> PipelineResult:
        """The whole result at once: for synchronous requests."""
        return await FileRun(self, request).result()

    async def transcribe_streaming(self, request: PipelineRequest) -> AsyncIterator[PipelineEvent]:
        """Progress (and with `stream_text` the text, chunk by chunk) while it works, then the result: for
        jobs and streamed responses (`handle.options(stream=True)`)."""
        events: asyncio.Queue[PipelineProgress | PipelineText] = asyncio.Queue()
        run = asyncio.ensure_future(FileRun(self, request, on_event=events.put_nowait).result())
        try:
            while not run.done():
                waiter = asyncio.ensure_future(events.get())
                await asyncio.wait([run, waiter], return_when=asyncio.FIRST_COMPLETED)
                if waiter.done():
                    yield waiter.result()
                else:
                    waiter.cancel()
            while not events.empty():
                yield events.get_nowait()
            yield run.result()
        finally:
            run.cancel()


class FileRun:
    """One file through the pipeline."""

    def __init__(
        self,
        pipeline: TranscriptionPipeline,
        request: PipelineRequest,
        on_event: Callable[[PipelineProgress | PipelineText], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.request = request
        self.limits = pipeline.config.limits
        self.on_event = on_event
        self.max_in_flight = pipeline.config.chunking.max_chunks_in_flight
        self.sender = uuid.uuid4().hex  # the Transcriber lets senders take turns (`Lane`)
        # A streamed request starts with one chunk in flight and adds one each time a chunk comes back (a
        # slow start: rounds of 1, 2, 4, ... chunks), so its first text comes after one chunk's decoding.
        self.window = 1 if request.stream_text else self.max_in_flight
        self.in_flight = asyncio.Semaphore(self.window)
        options = request.options
        if request.diarization is not None:  # speakers are given to words, so words need their times
            options = options.model_copy(update={"word_timestamps": True})
        self.options = ChunkOptions(**options.model_dump())
        # Decoded audio goes to disk when it is needed again: by the Diarizer, or to decode a chunk again
        # in the file's language once that is known.
        needs_decoded = request.diarization is not None or request.options.language is None
        self.decoded_path = decoded_copy_path(request.source_path) if needs_decoded else None
        self.pieces: list[Pieces] = []  # where each chunk's speech lies in the file
        self.transcripts: list[asyncio.Task[ChunkTranscript]] = []
        self.transcribed: list[bool] = []
        self.held: Chunk | None = None  # cut, holding a place in flight, sent once it is known whether it is last
        self.reported = 0.0
        self.decoded_samples = 0
        self.expected_samples: int | None = None
        self.decoding_done = False
        self.sent = asyncio.Event()  # set whenever a chunk was sent, or decoding ended
        self.in_order: asyncio.Task[list[ChunkTranscript]] | None = None
        if request.stream_text:
            self.in_order = asyncio.ensure_future(self._texts_in_order())

    async def result(self) -> PipelineResult:
        source = Path(self.request.source_path)
        try:
            if self.request.url is not None:
                await fetch_to_file(self.request.url, source, self.request.max_bytes, self.pipeline.config.url_input)
            declared = await asyncio.to_thread(declared_duration, source)
            if declared is not None and declared > self.limits.max_duration_s + 1:  # refused before decoding
                raise too_long(self.limits.max_duration_s, declared)
            if declared is not None:
                self.expected_samples = int(declared * SAMPLE_RATE)
            await self._decode_and_send()
            duration = self.decoded_samples / SAMPLE_RATE
            if duration < self.limits.min_duration_s:
                raise AudioRejectedError(
                    f"audio is too short ({duration:.2f} s): the minimum is {self.limits.min_duration_s} s"
                )
            if self.request.diarization is None:
                result: PipelineResult = await self._transcript()
            else:
                transcript, diarization = await asyncio.gather(
                    self._transcript(), self._diarize(self.request.diarization)
                )
                result = diarized_transcription(transcript, diarization)
            if self.request.options.profanity_filter:
                result = await asyncio.to_thread(mask_transcript, result)
            return result
        finally:
            for task in self.transcripts:
                task.cancel()
            if self.in_order is not None:
                self.in_order.cancel()
            if self.decoded_path is not None:
                self.decoded_path.unlink(missing_ok=True)

    async def _decode_and_send(self) -> None:
        """Decode window by window and send every final chunk on as soon as the next one is cut (see
        `_hold`); at most `max_chunks_in_flight` chunks are held or in flight at once, and decoding waits
        for room."""
        windows = decode_windows(self.request.source_path, max_duration_s=self.limits.max_duration_s)
        streaming = StreamingChunker(self.pipeline.chunker)
        spool = None
        if self.decoded_path is not None:
            spool = self.decoded_path.open("wb")
        lane, decoding = self.request.interactive, self.pipeline.files_decoding
        decoding[lane] += 1
        try:
            while (window := await asyncio.to_thread(next, windows, None)) is not None:
                if spool is not None:
                    await asyncio.to_thread(spool.write, window.tobytes())
                self.decoded_samples += len(window)
                for chunk in await asyncio.to_thread(list, streaming.feed(window)):
                    await self._hold(chunk)
            for chunk in await asyncio.to_thread(list, streaming.finish()):
                await self._hold(chunk)
            if self.held is not None:  # the file's last chunk: more come only from other files (this one counts)
                self._send(self.held, more_coming=decoding[lane] > 1)
        finally:
            decoding[lane] -= 1
            self.decoding_done = True
            self.sent.set()
            windows.close()
            if spool is not None:
                spool.close()

    async def _hold(self, chunk: Chunk) -> None:
        """A chunk waits until the next one is cut, so that it goes to the Transcriber saying whether more
        are on their way: the Transcriber then holds an idle engine for a fuller batch (`Lane`) instead of
        starting on the first chunk or two of a long file, or of a burst of requests."""
        if self.held is not None:
            self._send(self.held, more_coming=True)
            self.held = None
        await self.in_flight.acquire()  # released when the Transcriber has answered
        self.held = chunk

    def _send(self, chunk: Chunk, more_coming: bool) -> None:
        self.pieces.append(chunk.pieces)
        self.transcribed.append(False)
        index = len(self.pieces) - 1
        self.transcripts.append(asyncio.ensure_future(self._first_pass(index, chunk.samples, more_coming)))
        self.sent.set()

    async def _first_pass(self, index: int, samples: np.ndarray, more_coming: bool) -> ChunkTranscript:
        try:
            transcript = await self._transcribe(samples, self.options, more_coming)
        finally:
            self.in_flight.release()
        if self.window < self.max_in_flight:  # a streamed request's window grows
            self.window += 1
            self.in_flight.release()
        self.transcribed[index] = True
        self._report_progress()
        return transcript

    async def _again(self, index: int, options: ChunkOptions) -> ChunkTranscript:
        """A chunk decoded a second time, read back from the decoded spool."""
        assert self.decoded_path is not None, "a second pass needs the decoded spool"
        spool = np.memmap(self.decoded_path, dtype=np.float32, mode="r")
        samples = np.array(chunk_audio(spool, self.pieces[index]))  # a copy: the spool is deleted when done
        async with self.in_flight:
            return await self._transcribe(samples, options)

    async def _transcribe(
        self, samples: np.ndarray, options: ChunkOptions, more_coming: bool = False
    ) -> ChunkTranscript:
        """One chunk on the Transcriber; sent again if the replica decoding it dies (Serve replaces it)."""
        transcriber, interactive, sender = self.pipeline.transcriber, self.request.interactive, self.sender
        call = lambda: transcriber.transcribe_chunk.remote(samples, options, interactive, more_coming, sender)  # noqa: E731
        return await retry_on_worker_loss(call, "a chunk")

    def _report_progress(self) -> None:
        """The share of the file up to the first chunk still being transcribed (or to the end of the last
        chunk, when all are back), of its declared length or of what is decoded so far; never backwards,
        and 1.0 only when the result is there."""
        if self.on_event is None:
            return
        pending = [pieces[0][0] for pieces, done in zip(self.pieces, self.transcribed, strict=True) if not done]
        position = min(pending, default=self.pieces[-1][-1][1])  # all are back: up to the last one's end
        total = max(self.expected_samples or 0, self.decoded_samples, 1)
        self.reported = max(self.reported, round(min(position / total, 0.99), 4))  # never backwards
        self.on_event(PipelineProgress(share=self.reported))

    async def _texts_in_order(self) -> list[ChunkTranscript]:
        """With `stream_text`: each chunk's text, once it and every chunk before it are back. Text sent is
        final, so the language is settled by the first chunk (when not given), and a later chunk that came
        back in another language is decoded again in it before its text goes out."""
        settled: list[ChunkTranscript] = []
        language = self.options.language
        while True:
            while len(settled) == len(self.transcripts):
                if self.decoding_done:
                    return settled
                self.sent.clear()
                await self.sent.wait()
            index = len(settled)
            transcript = await self.transcripts[index]
            language = language or transcript.language
            if transcript.language != language:
                transcript = await self._again(index, self.options.model_copy(update={"language": language}))
            settled.append(transcript)
            text = "".join(segment.text for segment in transcript.segments)
            if self.request.options.profanity_filter:
                text = mask_text(text, language)
            if text and self.on_event is not None:
                self.on_event(PipelineText(text=text))

    async def _transcript(self) -> Transcript:
        """The chunks' transcripts in one language on the file's timeline.

        Without a language, every chunk's language is detected in the encoder pass that decodes it (no
        extra pass). The file's language is the one most of its speech is in; the rare chunk that came out
        in another one is decoded again in it (read back from the decoded spool), so the transcript is in
        one language."""
        duration, options = self.decoded_samples / SAMPLE_RATE, self.options
        if not self.transcripts:  # silence: nothing to transcribe
            return Transcript(language=options.language or "en", duration=duration, segments=[])
        if self.in_order is not None:  # streamed: the text already sent is the transcript's
            transcripts = await self.in_order
            return join_chunks(transcripts, self.pieces, duration, options.language or transcripts[0].language)
        transcripts = list(await asyncio.gather(*self.transcripts))
        language = options.language or main_language(transcripts, self.pieces)
        settled = options.model_copy(update={"language": language})
        redo = [index for index, transcript in enumerate(transcripts) if transcript.language != language]
        redone = await asyncio.gather(*(self._again(index, settled) for index in redo))
        for index, transcript in zip(redo, redone, strict=True):
            transcripts[index] = transcript
        return join_chunks(transcripts, self.pieces, duration, language)

    async def _diarize(self, options: DiarizationOptions) -> Diarization:
        if not self.transcripts:  # no speech was found, so there is no one to find
            return Diarization(turns=[], exclusive_turns=[])
        diarizer, path = self.pipeline.diarizer, str(self.decoded_path)
        return await retry_on_worker_loss(lambda: diarizer.diarize_file.remote(path, options), "diarization")


def main_language(transcripts: list[ChunkTranscript], chunk_pieces: list[Pieces]) -> str:
    """The language of the most speech (chunk samples), ties going to the earliest chunk's."""
    samples_per_language: dict[str, int] = {}
    for transcript, pieces in zip(transcripts, chunk_pieces, strict=True):
        speech = speech_samples(pieces)
        samples_per_language[transcript.language] = samples_per_language.get(transcript.language, 0) + speech
    return max(samples_per_language, key=samples_per_language.__getitem__)


def join_chunks(
    chunk_transcripts: list[ChunkTranscript], chunk_pieces: list[Pieces], duration: float, language: str
) -> Transcript:
    """One transcript on the file's timeline: chunk times mapped onto the file through each chunk's pieces
    (`file_time`), ids renumbered.

    Whisper may put a last timestamp past the end of a chunk (into its padding); times are clamped to it.
    """
    segments: list[Segment] = []
    words: list[Word] = []
    for pieces, chunk in zip(chunk_pieces, chunk_transcripts, strict=True):
        for segment in chunk.segments:
            segments.append(
                segment.model_copy(
                    update={
                        "id": len(segments),
                        "seek": round(pieces[0][0] / SAMPLE_RATE * 100),  # Whisper's seek counts 10 ms mel frames
                        "start": round(file_time(segment.start, pieces), 3),
                        "end": round(file_time(segment.end, pieces, is_end=True), 3),
                    }
                )
            )
        words.extend(
            word.model_copy(
                update={
                    "start": round(file_time(word.start, pieces), 3),
                    "end": round(file_time(word.end, pieces, is_end=True), 3),
                }
            )
            for word in chunk.words
        )
    return Transcript(language=language, duration=duration, segments=segments, words=words)
