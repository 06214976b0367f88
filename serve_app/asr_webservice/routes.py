"""`POST /asr` and `POST /detect-language` as whisper-asr-webservice answers them: the upload in the multipart
field `audio_file`, the options in the query string, the body as text (`Asr-Engine` and an attachment's
`Content-Disposition`), errors as FastAPI's `{"detail": ...}`. The same intake, pipeline and charge as
`POST /v1/audio/transcriptions`; access and the key charged are `access`'s."""

import asyncio
import dataclasses
from functools import partial
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import Response

from deployments.transcriber.languages import is_whisper_language, language_name
from deployments.types import PipelineResult
from serve_app.asr_webservice.access import ChargedKey
from serve_app.asr_webservice.config import ASR_WEBSERVICE
from serve_app.asr_webservice.output import Output, render_output
from serve_app.asr_webservice.pcm import frame_as_wav
from serve_app.asr_webservice.request import AsrRequest
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.edge import Edge
from serve_app.common.intake import Intake
from serve_app.common.synchronous import transcribe_synchronously

router = APIRouter(tags=["whisper-asr-webservice"])

FILE_FIELD = "audio_file"
DETECTION_SECONDS = 30.0
"""`/detect-language` reads the first 30 s, as whisper-asr-webservice does (of raw PCM: see the docs)."""
ASR_PARAMETERS = frozenset(
    {"encode", "task", "language", "initial_prompt", "vad_filter", "word_timestamps", "output", "diarize",
     "min_speakers", "max_speakers"}
)  # fmt: skip
DETECT_PARAMETERS = frozenset({"encode"})


def refuse_unknown(request: Request, known: frozenset[str]) -> None:
    """A query parameter the route does not take is a 400 that names it, never ignored."""
    unknown = sorted(name for name in request.query_params if name not in known)
    if unknown:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"not supported by {request.url.path}: {', '.join(repr(name[:64]) for name in unknown)}"
            f" (it takes {', '.join(sorted(known))})",
        )


class Upload:
    """What `/asr` and `/detect-language` take alike (the key charged, the app's parts, `encode`) and do alike:
    receive the upload, run it through the pipeline, charge it once (`serve_app.common.synchronous`)."""

    def __init__(self, request: Request, key: ChargedKey, services: ServicesDependency, encode: bool = True) -> None:
        self.request, self.key, self.services, self.config = request, key, services, services.config
        self.encode = encode

    async def transcribed(self, asr: AsrRequest, max_seconds: float | None = None) -> tuple[PipelineResult, str]:
        """The upload transcribed (raw PCM framed as WAV, at most `max_seconds` of it) and charged, and its file
        name."""
        read = partial(self._receive, asr, max_seconds=max_seconds)
        return await transcribe_synchronously(self.services, self.key, read, _with_filename)

    async def _receive(self, asr: AsrRequest, intake: Intake, max_seconds: float | None) -> AsrRequest:
        """The upload to the intake's spool (framing raw PCM as WAV); `asr` with its file name."""
        received = await intake.receive(self.request, self.config.limits.max_sync_upload_bytes, FILE_FIELD)
        if received.file is None:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"upload the audio in the multipart field {FILE_FIELD!r}")
        if received.file.size == 0:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "the uploaded file is empty")
        if not self.encode:
            await asyncio.to_thread(frame_as_wav, intake.spool_path, max_seconds)
        return dataclasses.replace(asr, filename=received.file.filename)


def _with_filename(result: PipelineResult, asr: AsrRequest, _: str) -> tuple[PipelineResult, str]:
    return result, asr.filename


UploadDependency = Annotated[Upload, Depends()]


@router.post("/asr", include_in_schema=False)
async def asr(  # whisper-asr-webservice's query parameters, one argument each (`encode` in Upload)
    upload: UploadDependency,
    task: Literal["transcribe", "translate"] = "transcribe",
    language: str | None = None,
    initial_prompt: str | None = None,
    vad_filter: bool = False,
    word_timestamps: bool = False,
    output: Output = Output.txt,
    diarize: bool = False,
    min_speakers: Annotated[int | None, Query(ge=1)] = None,
    max_speakers: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """Transcribe or translate the upload. `vad_filter` is accepted either way: the pipeline always cuts
    silence out with its VAD."""
    refuse_unknown(upload.request, ASR_PARAMETERS)
    if language is not None and not is_whisper_language(language):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"language {language[:16]!r} is not a Whisper language code")
    if not diarize and (min_speakers is not None or max_speakers is not None):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "min_speakers and max_speakers need diarize=true")
    subtitles = output in (Output.srt, Output.vtt)  # their cues are cut from the words
    asr_request = AsrRequest(
        upload.config.model_ids[0], task, language, initial_prompt, word_timestamps or subtitles, diarize,
        min_speakers, max_speakers,
    )  # fmt: skip
    result, filename = await upload.transcribed(asr_request)
    body = render_output(result, output, word_timestamps)
    return Response(
        body,
        media_type="text/plain",
        headers={
            "Asr-Engine": ASR_WEBSERVICE.of(upload.config).engine_name,
            "Content-Disposition": f'attachment; filename="{quote(filename)}.{output.value}"',
        },
    )


@router.post("/detect-language", include_in_schema=False)
async def detect_language(upload: UploadDependency) -> dict[str, str | float]:
    """The language spoken, from a transcription of the upload (raw PCM: its first 30 s). `confidence` is the
    share of the transcribed speech Whisper heard in that language."""
    refuse_unknown(upload.request, DETECT_PARAMETERS)
    result, _ = await upload.transcribed(AsrRequest(upload.config.model_ids[0]), DETECTION_SECONDS)
    spoken = [(s.end - s.start, getattr(s, "language", None) or result.language) for s in result.segments]
    total = sum(length for length, _ in spoken)
    share = sum(length for length, code in spoken if code == result.language) / total if total > 0 else 0.0
    return {
        "detected_language": language_name(result.language),
        "language_code": result.language,
        "confidence": round(share, 3),
    }


EDGE = Edge(router, config=ASR_WEBSERVICE)
"""Errors as FastAPI's `{"detail": ...}` (ours) and no jobs: its routes and its settings."""
