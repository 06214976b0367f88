"""One file through the pipeline: fetched, decoded a window at a time and cut into chunks that a
`ChunkSender` sends on, then put together by a `TranscriptAssembly` (and diarized)."""

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.serve.handle import DeploymentHandle

from deployments.analysis.errors import AnalysisError, AnalysisTimeout, analysis_failure
from deployments.diarization.words import diarized_transcription
from deployments.errors import AudioRejectedError, InputRejectedError
from deployments.files._assembly import LanguageRule, TranscriptAssembly
from deployments.files._chunking import StreamingChunker
from deployments.files._emotions import emotions_from_audio
from deployments.files._profanity import mask_transcript
from deployments.files._references import decode_references, remove_decoded
from deployments.files._sending import ChunkSender, FileProgress
from deployments.files._url_fetch import fetch_to_file
from deployments.files.decoding import declared_duration, decode_windows, too_long
from deployments.redaction.applied import redactor_for
from deployments.redaction.audio import redacted_spans, write_redacted_audio
from deployments.retry import retry_on_worker_loss
from deployments.storage.spool import decoded_copy_path, redacted_audio_path
from deployments.types import (
    SAMPLE_RATE,
    Analysis,
    AnalysisOptions,
    ChunkOptions,
    Diarization,
    DiarizationOptions,
    DiarizedTranscript,
    Emotion,
    KnownSpeaker,
    PipelineProgress,
    PipelineRequest,
    PipelineResult,
    PipelineText,
)
from deployments.vocabulary.applied import AppliedVocabulary

if TYPE_CHECKING:
    from deployments.files.pipeline import TranscriptionPipeline


class FileRun:
    """One file through the pipeline."""

    def __init__(
        self,
        pipeline: "TranscriptionPipeline",
        request: PipelineRequest,
        on_event: Callable[[PipelineProgress | PipelineText], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.request = request
        self.limits = pipeline.config.limits
        options = request.options
        if request.diarization is not None:  # speakers are given to words, so words need their times
            options = options.model_copy(update={"word_timestamps": True})
        # Decoded audio goes to disk when it is needed again: by the Diarizer, or to decode a chunk again
        # in the file's language once that is known (an unsurely detected chunk's, or with one language per file).
        # The vocabulary's terms are the prompt; when there are more than fit, each chunk is read a second time
        # with those like its first reading's words, else a chunk that read the prompt back is read again without
        # it (not when its text streams: text sent is final). Both read the chunk from the decoded spool.
        self.vocabulary = AppliedVocabulary.of(options.vocabulary, pipeline.config.vocabulary, options.prompt)
        rereads = self.vocabulary is not None and not request.stream_text
        second_reading = rereads and self.vocabulary is not None and not self.vocabulary.fits(options.language)
        redaction = request.options.redaction
        self.redacted_audio = redaction.audio if redaction is not None else None  # written from the decoded copy
        needs_decoded = (
            request.diarization is not None or request.options.language is None or rereads or bool(self.redacted_audio)
        )
        self.decoded_path = decoded_copy_path(request.source_path) if needs_decoded else None
        self.progress = FileProgress(on_event)
        prompt = options.prompt if self.vocabulary is None else self.vocabulary.first_prompt(options.language)
        self.sender = ChunkSender(
            pipeline.transcriber,
            ChunkOptions(**{**options.model_dump(), "prompt": prompt}),
            interactive=request.interactive,
            max_in_flight=pipeline.config.chunking.max_chunks_in_flight,
            slow_start=request.stream_text,
            progress=self.progress,
            decoded_path=self.decoded_path,
        )
        detection = request.options.speech_detection
        self.chunker = pipeline.chunker if detection is None else pipeline.chunker.detecting(detection)
        self.known_speakers: list[KnownSpeaker] = []  # their clips' decoded copies, once decoded
        chunking = pipeline.config.chunking
        self.redactor = redactor_for(request.options.redaction, pipeline.config.redaction)
        self.assembly = TranscriptAssembly(
            self.sender,
            request.options.profanity_filter,
            redactor=self.redactor,
            stream_text=request.stream_text,
            on_text=on_event,
            rule=LanguageRule(chunking.language_per_chunk, chunking.language_min_probability),
            vocabulary=self.vocabulary,
            second_reading=second_reading,
            rereads=rereads,
        )

    async def result(self) -> PipelineResult:
        source = Path(self.request.source_path)
        try:
            if self.request.options.task == "translate":
                await self._check_can_translate()
            if self.request.url is not None:
                await fetch_to_file(self.request.url, source, self.request.max_bytes, self.pipeline.config.url_input)
            if self.request.diarization is not None and self.request.diarization.known_speakers:
                # before the file: a bad clip is refused without the file's work
                self.known_speakers = await asyncio.to_thread(
                    decode_references, self.request.diarization.known_speakers
                )
            declared = await asyncio.to_thread(declared_duration, source)
            if declared is not None and declared > self.limits.max_duration_s + 1:  # refused before decoding
                raise too_long(self.limits.max_duration_s, declared)
            if declared is not None:
                self.progress.expected_samples = int(declared * SAMPLE_RATE)
            await self._decode_and_send()
            duration = self.progress.decoded_samples / SAMPLE_RATE
            if duration < self.limits.min_duration_s:
                raise AudioRejectedError(
                    f"audio is too short ({duration:.2f} s): the minimum is {self.limits.min_duration_s} s"
                )
            if self.request.diarization is None:
                result: PipelineResult = await self.assembly.transcript(duration)
            else:
                transcript, diarization = await asyncio.gather(
                    self.assembly.transcript(duration), self._diarize(self.request.diarization)
                )
                result = diarized_transcription(transcript, diarization)
            if self.request.options.profanity_filter:
                result = await asyncio.to_thread(mask_transcript, result)
            if self.redactor is not None:  # before the analysis: the LLM reads the redacted words
                result = await self._redacted(result)
            if self.request.analysis is not None and self.request.analysis.wanted:
                result = result.model_copy(update={"analysis": await self._analyze(result, self.request.analysis)})
            return result
        finally:
            self.sender.cancel()
            self.assembly.cancel()
            if self.decoded_path is not None:
                self.decoded_path.unlink(missing_ok=True)
            remove_decoded(self.known_speakers)

    async def _redacted(self, result: PipelineResult) -> PipelineResult:
        """The result redacted; with `redaction.audio`, its audio too, written beside the input for the job."""
        assert self.redactor is not None
        translated = self.request.options.task == "translate"
        redacted = await asyncio.to_thread(self.redactor.transcript, result, translated)
        if self.redacted_audio is not None and self.decoded_path is not None:
            target = redacted_audio_path(self.request.source_path, self.redacted_audio)
            spans = redacted_spans(result, redacted)
            await asyncio.to_thread(write_redacted_audio, self.decoded_path, spans, target, self.redacted_audio)
        return redacted

    async def _check_can_translate(self) -> None:
        """Refuse a translation before any work when the Transcriber's model is English-only (a `.en` model): it
        would only transcribe. Asked of the Transcriber itself, the one that knows which model it loaded."""
        transcriber = self.pipeline.transcriber
        if not await retry_on_worker_loss(lambda: transcriber.multilingual.remote(), "the model's languages"):
            raise InputRejectedError(
                "this service's Whisper model is English-only: it cannot translate. Send English speech to"
                " /v1/audio/transcriptions, or have the operator configure a multilingual model (whisper.model,"
                " e.g. embedded:base or large-v3)"
            )

    async def _decode_and_send(self) -> None:
        """Decode window by window and hand every chunk to the sender as soon as it is cut; at most
        `max_chunks_in_flight` chunks are held or in flight at once, and decoding waits for room."""
        windows = decode_windows(self.request.source_path, max_duration_s=self.limits.max_duration_s)
        streaming = StreamingChunker(self.chunker)
        spool = None
        if self.decoded_path is not None:
            spool = self.decoded_path.open("wb")
        lane, decoding = self.request.interactive, self.pipeline.files_decoding
        decoding[lane] += 1
        try:
            while (window := await asyncio.to_thread(next, windows, None)) is not None:
                if spool is not None:
                    await asyncio.to_thread(spool.write, window.tobytes())
                self.progress.decoded_samples += len(window)
                for chunk in await asyncio.to_thread(list, streaming.feed(window)):
                    await self.sender.hold(chunk)
            for chunk in await asyncio.to_thread(list, streaming.finish()):
                await self.sender.hold(chunk)
            # The file's last chunk: more come only from other files (this one counts).
            self.sender.send_held(more_coming=decoding[lane] > 1)
        finally:
            decoding[lane] -= 1
            self.sender.end()
            windows.close()
            if spool is not None:
                spool.close()

    async def _analyze(self, transcript: PipelineResult, options: AnalysisOptions) -> Analysis:
        """What `options` asks of the finished (masked) transcript. Emotions come from the audio classifier where
        the application has one (`analysis.audio_emotion_model`), over the diarized segments' spans, and the
        Analyzer is asked only for the rest (if any); otherwise the Analyzer judges them from the words.
        Errors are raised as themselves, not wrapped in this replica's RayTaskError, so the edge and the job
        runner recognise them."""
        classifier = self.pipeline.audio_emotions
        if not (options.emotions and classifier is not None and isinstance(transcript, DiarizedTranscript)):
            return await self._ask_analyzer(transcript, options)
        rest = options.model_copy(update={"emotions": False})
        if not rest.wanted:
            return Analysis(emotions=await self._heard_emotions(classifier, transcript, options.timeout_s))
        analysis, emotions = await asyncio.gather(
            self._ask_analyzer(transcript, rest), self._heard_emotions(classifier, transcript, options.timeout_s)
        )
        return analysis.model_copy(update={"emotions": emotions})

    async def _heard_emotions(
        self, classifier: DeploymentHandle[Any], transcript: DiarizedTranscript, timeout_s: float | None
    ) -> list[Emotion | None]:
        """The classifier's emotions of the segments, within a synchronous request's analysis budget (`timeout_s`;
        a job's wait as long as it takes)."""
        if self.decoded_path is None:
            raise RuntimeError("emotions from the audio need the decoded spool, which a diarized file always has")
        try:
            return await asyncio.wait_for(
                emotions_from_audio(classifier, self.decoded_path, transcript.segments), timeout=timeout_s
            )
        except AnalysisError as error:
            raise analysis_failure(error) or error from None
        except TimeoutError:
            raise AnalysisTimeout("the audio emotions ran past the analysis's budget") from None

    async def _ask_analyzer(self, transcript: PipelineResult, options: AnalysisOptions) -> Analysis:
        return await ask_analyzer(self.pipeline.analyzer, transcript, options)

    async def _diarize(self, options: DiarizationOptions) -> Diarization:
        if not self.sender.transcripts:  # no speech was found, so there is no one to find
            return Diarization(turns=[], exclusive_turns=[])
        diarizer, path = self.pipeline.diarizer, str(self.decoded_path)
        options = options.model_copy(update={"known_speakers": self.known_speakers})  # the decoded clips
        return await retry_on_worker_loss(lambda: diarizer.diarize_file.remote(path, options), "diarization")


async def ask_analyzer(
    analyzer: DeploymentHandle[Any] | None, transcript: PipelineResult, options: AnalysisOptions
) -> Analysis:
    """The Analyzer's answer; its errors raised as themselves, not wrapped in this replica's RayTaskError, so the
    edge and the job runner recognise them."""
    if analyzer is None:
        raise RuntimeError("an analysis was asked of a pipeline built without an Analyzer")
    try:
        return await retry_on_worker_loss(lambda: analyzer.analyze.remote(transcript, options), "analysis")
    except AnalysisError as error:
        raise analysis_failure(error) or error from None
