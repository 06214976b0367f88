"""`POST /v1/audio/transcriptions`: synchronous transcription, whole or streamed (`stream=true`)."""

from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployments.types import PipelineResult
from serve_app.common.auth import FUNDS_ERROR
from serve_app.common.dependencies import FundedKey, ServicesDependency
from serve_app.common.errors import ANALYSIS_ERRORS, UPLOAD_ERRORS
from serve_app.common.synchronous import transcribe_synchronously
from serve_app.common.voices import known_voices
from serve_app.rendering.bodies import (
    DiarizedTranscription,
    LLMResult,
    OpenAIDiarizedTranscription,
    TranscriptionJson,
    TranscriptionVerboseJson,
)
from serve_app.rendering.response_formats import render
from serve_app.rest.form_intake import read_transcription_form
from serve_app.rest.schemas.audio_form import multipart_request_body
from serve_app.rest.schemas.transcription_form import TranscriptionForm
from serve_app.rest.streaming import stream_transcription

router = APIRouter(tags=["transcriptions"])


@router.post(
    "/v1/audio/transcriptions",
    response_model=TranscriptionJson
    | TranscriptionVerboseJson
    | DiarizedTranscription
    | OpenAIDiarizedTranscription
    | LLMResult,
    responses={
        200: {
            "content": {"text/plain": {}, "text/vtt": {}, "text/event-stream": {}},
            "description": "The transcript, in response_format; with stream=true, server-sent events.",
        },
        **UPLOAD_ERRORS,
        **FUNDS_ERROR,
        **ANALYSIS_ERRORS,
    },
    openapi_extra={"requestBody": multipart_request_body(TranscriptionForm)},
)
async def create_transcription(request: Request, key: FundedKey, services: ServicesDependency) -> Response:
    """Spool the upload (or later the URL's file), let the pipeline deployment transcribe it, charge, render."""
    max_file_bytes = services.config.limits.max_sync_upload_bytes
    voices = partial(known_voices, services, key.owner)
    read = partial(
        read_transcription_form,
        request,
        max_file_bytes=max_file_bytes,
        synchronous=True,
        voices=voices,
        owner=key.owner,
    )
    return await transcribe_synchronously(
        services, key, read, _render, stream=lambda form: stream_transcription if form.stream else None
    )


def _render(result: PipelineResult, form: TranscriptionForm, _: str) -> Response:
    spec = form.render_spec()
    return render(result, spec.response_format, spec.timestamp_granularities, spec.subtitles)
