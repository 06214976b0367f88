"""`POST /v1/audio/transcriptions`: synchronous transcription, whole or streamed (`stream=true`)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployments.retry import retry_on_worker_loss
from deployments.types import PipelineResult
from serve_app.common.auth import FUNDS_ERROR
from serve_app.common.dependencies import ConfigDependency, FundedKey, KeyPrice, LedgerDependency, PipelineDependency
from serve_app.common.errors import ANALYSIS_ERRORS, UPLOAD_ERRORS
from serve_app.common.intake import Intake
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
async def create_transcription(
    request: Request,
    key: FundedKey,
    price: KeyPrice,
    config: ConfigDependency,
    pipeline: PipelineDependency,
    ledger: LedgerDependency,
) -> Response:
    """Spool the upload (or later the URL's file), let the pipeline deployment transcribe it, charge, render."""
    with Intake(config, price) as intake:
        form = await read_transcription_form(request, intake, config.limits.max_sync_upload_bytes, synchronous=True)
        pipeline_request = intake.pipeline_request(form, stream_text=form.stream)
        charge = intake.charge(ledger, key.owner, form)
        if form.stream:
            response = await stream_transcription(pipeline, pipeline_request, charge)
            intake.hand_over()  # the stream removes the spooled file when it ends
            return response
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: pipeline.transcribe.remote(pipeline_request), "a synchronous request", attempts=2
        )
        await charge(result)
    spec = form.render_spec()
    return render(result, spec.response_format, spec.timestamp_granularities, spec.subtitles)
