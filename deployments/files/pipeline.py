"""TranscriptionPipeline: the deployment through which all audio flows, one way.

    spooled file (or URL) -> decode a window at a time -> VAD chunks -> Transcriber (batched)
                                       \\-> decoded 16 kHz spool -> Diarizer (reads the file itself)
                                                                 -> Analyzer (prompt, roles, emotions: when asked)
                                                                 -> AudioEmotions (each segment's samples, read
                                                                    from the spool: emotions, when an operator's
                                                                    classifier is set; see `_emotions`)
                                                                 -> transcript back to the caller

The Ingress and the JobTracker send a `PipelineRequest` (a path and options) and get a domain result
back: neither ever holds decoded samples or the upload's bytes. This replica holds one decoded window,
the unfinished chunk and at most `max_chunks_in_flight` chunks on their way to the Transcriber, so its
memory does not grow with the file's length.

Each file is a `FileRun` (`_file_run`): its chunks go to the Transcriber through a `ChunkSender`
(`_sending`), and a `TranscriptAssembly` (`_assembly`) puts their transcripts together, each chunk in the
language detected in it (`chunking.language_per_chunk`) or all in the file's main one.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.config import PipelineConfig, VoicesConfig
from deployments.files._channels import channels_result
from deployments.files._chunking import SpeechChunker
from deployments.files._enrolment import enrolment_speech
from deployments.files._file_run import FileRun, ask_analyzer
from deployments.files._url_fetch import check_url
from deployments.storage.spool import decoded_copy_path
from deployments.types import (
    Analysis,
    AnalysisOptions,
    PipelineProgress,
    PipelineRequest,
    PipelineResult,
    PipelineText,
    VoicePrint,
)
from deployments.vocabulary.dictionaries import check_dictionaries

PipelineEvent = PipelineProgress | PipelineText | PipelineResult


@serve.deployment(max_ongoing_requests=32)
class TranscriptionPipeline:
    """Decoding and VAD are CPU work apart from the model, so this deployment scales on its own; it
    spends the rest of its time awaiting the Transcriber and the Diarizer."""

    def __init__(
        self,
        transcriber: DeploymentHandle[Any],
        diarizer: DeploymentHandle[Any],
        config: PipelineConfig,
        analyzer: DeploymentHandle[Any] | None = None,
        audio_emotions: DeploymentHandle[Any] | None = None,
    ) -> None:
        self.transcriber = transcriber
        self.diarizer = diarizer
        self.analyzer = analyzer  # the Analyzer (deployments/analysis/), for requests that ask for an analysis
        # The audio emotion classifier (analysis.audio_emotion_model), when the operator gave one: it then judges
        # the emotions of diarized segments instead of the Analyzer.
        self.audio_emotions = audio_emotions
        self.config = config
        check_dictionaries(config.vocabulary)
        chunking = config.chunking
        self.chunker = SpeechChunker(chunking.vad_filter, chunking.max_chunk_s, chunking.max_span_s)
        self.files_decoding = {True: 0, False: 0}  # files being decoded now, interactive (True) or jobs'

    async def check_url(self, url: str) -> None:
        """Refuse a URL now if it is malformed or resolves to a non-public address (UrlRejectedError)."""
        await check_url(url, self.config.url_input)

    async def analyze(self, transcript: PipelineResult, options: AnalysisOptions) -> Analysis:
        """What `options` asks of a transcript finished earlier (a stored job's: a protocol that asks questions of
        past transcripts), by this deployment's Analyzer handle, so the edge needs none of its own."""
        return await ask_analyzer(self.analyzer, transcript, options)

    async def voice_print(
        self, path: str, config: VoicesConfig, spans: list[tuple[float, float]] | None = None, field: str = "file"
    ) -> VoicePrint:
        """An enrolment clip spooled at `path` (or `spans` of a job's recording) as a voice: its speech
        (`_enrolment`) written beside it for the Diarizer's speaker encoder, which reads it; AudioRejectedError
        naming `field` for too little speech."""
        speech = await asyncio.to_thread(enrolment_speech, path, config, spans, field)
        copy = decoded_copy_path(path)
        try:
            await asyncio.to_thread(speech.tofile, copy)
            del speech
            voice: VoicePrint = await self.diarizer.voice_print_file.remote(str(copy))
            return voice
        finally:
            copy.unlink(missing_ok=True)

    async def transcribe(self, request: PipelineRequest) -> PipelineResult:
        """The whole result at once: for synchronous requests."""
        if request.options.multichannel:
            return await channels_result(self, request)
        return await FileRun(self, request).result()

    async def transcribe_streaming(self, request: PipelineRequest) -> AsyncIterator[PipelineEvent]:
        """Progress (and with `stream_text` the text, chunk by chunk) while it works, then the result: for
        jobs and streamed responses (`handle.options(stream=True)`)."""
        events: asyncio.Queue[PipelineProgress | PipelineText] = asyncio.Queue()
        run = asyncio.ensure_future(
            channels_result(self, request, events.put_nowait)
            if request.options.multichannel
            else FileRun(self, request, on_event=events.put_nowait).result()
        )
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
