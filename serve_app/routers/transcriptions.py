"""`POST /v1/audio/transcriptions`: synchronous transcription, whole or streamed (`stream=true`)."""

import uuid
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from ray.actor import ActorProxy

from deployments.billing import pricing
from deployments.billing.ledger import ChargeDetails
from deployments.retry import retry_on_worker_loss
from deployments.storage.spool import remove_spooled
from deployments.types import PipelineRequest, PipelineResult
from serve_app.analysis_fields import analysis_request
from serve_app.auth import FUNDS_ERROR
from serve_app.dependencies import ConfigDependency, FundedKey, KeyPrice, LedgerDependency, PipelineDependency
from serve_app.formatting import render
from serve_app.intake import ANALYSIS_ERRORS, UPLOAD_ERRORS, charge_details, check_model, receive_transcription_form
from serve_app.schemas import (
    DiarizedTranscription,
    LLMResult,
    OpenAIDiarizedTranscription,
    TranscriptionForm,
    TranscriptionJson,
    TranscriptionVerboseJson,
    multipart_request_body,
)
from serve_app.streaming import stream_transcription

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
    request_id = str(uuid.uuid4())
    spool_path = config.storage.spool_dir / request_id
    streaming = False
    try:
        form = await receive_transcription_form(request, spool_path, config.limits.max_sync_upload_bytes)
        check_model(form.model, config)
        form, analysis = analysis_request(form, config.analysis, synchronous=True)
        pipeline_request = PipelineRequest(
            source_path=str(spool_path),
            url=form.url,
            max_bytes=config.limits.max_sync_upload_bytes,
            options=form.transcription_options(),
            diarization=form.diarization_options(),
            stream_text=form.stream,
            interactive=True,
            analysis=analysis,
        )
        charge = Charge(ledger, request_id, key.owner, charge_details(price, form), spool_path)
        if form.stream:
            response = await stream_transcription(pipeline, pipeline_request, charge)
            streaming = True  # the stream removes the spooled file when it ends
            return response
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: pipeline.transcribe.remote(pipeline_request), "a synchronous request", attempts=2
        )
        await charge(result)
    finally:
        if not streaming:
            remove_spooled(spool_path)  # and a decoded copy left by a pipeline replica that died
    return render(result, form.response_format, form.timestamp_granularities)


class Charge:
    """Charges one synchronous request's completed work, once (by request id)."""

    def __init__(
        self, ledger: ActorProxy[Any], request_id: str, owner: str, details: ChargeDetails, source: Path
    ) -> None:
        self.ledger, self.request_id, self.owner = ledger, request_id, owner
        self.details, self.source = details, source

    async def __call__(self, result: PipelineResult) -> None:
        details = self.details.completed(result.language, self.source).analyzed(result.analysis)
        await pricing.charge(self.ledger, self.request_id, self.owner, result.duration, details)
