"""`POST /v1/audio/transcriptions`: synchronous transcription, whole or streamed (`stream=true`)."""

import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError

from deployments.billing.ledger import ChargeDetails
from deployments.retry import retry_on_worker_loss
from deployments.storage.spool import remove_spooled
from deployments.types import PipelineRequest, PipelineResult
from serve_app.auth import FUNDS_ERROR, ApiKey, price_of, require_funds
from serve_app.config import AppConfig
from serve_app.formatting import render
from serve_app.schemas import (
    DiarizedTranscription,
    ErrorResponse,
    TranscriptionForm,
    TranscriptionJson,
    TranscriptionVerboseJson,
    ValidationErrorResponse,
    multipart_request_body,
)
from serve_app.streaming import stream_transcription
from serve_app.upload import receive_form

router = APIRouter(tags=["transcriptions"])

UPLOAD_ERRORS: dict[int | str, dict] = {
    400: {"model": ErrorResponse, "description": "The form or the audio cannot be processed."},
    413: {"model": ErrorResponse, "description": "The file or a form field is too large."},
    415: {"model": ErrorResponse, "description": "The body is not a form."},
    422: {"model": ValidationErrorResponse, "description": "A form field is invalid."},
}
LIST_FIELDS = {
    "timestamp_granularities[]": "timestamp_granularities[]",
    "timestamp_granularities": "timestamp_granularities[]",
}
FORM_FIELDS = frozenset(
    {field.alias or name for name, field in TranscriptionForm.model_fields.items()} | set(LIST_FIELDS)
)
OFF_VALUES = frozenset({"false", "0", "none", "null"})
"""A field this service does not know, given one of these values, asks for nothing: it is let through."""


def unsupported_fields(error: ValidationError) -> list[str]:
    return [str(issue["loc"][0]) for issue in error.errors() if issue["type"] == "extra_forbidden"]


def check_model(model: str, config: AppConfig) -> None:
    if model not in config.model_ids:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"unknown model {model[:64]!r}: this service offers {', '.join(config.model_ids)} (GET /v1/models)",
        )


async def receive_transcription_form(request: Request, spool_path: Path, max_file_bytes: int) -> TranscriptionForm:
    """Stream the form in (the file to `spool_path`) and validate it; on any error the spool file is gone."""
    received = await receive_form(request, spool_path, max_file_bytes)
    values: dict[str, object] = {}
    for name, given in received.fields.items():
        given = [value for value in given if value != ""]  # an empty field means "not given", as in HTML forms
        if name not in FORM_FIELDS and all(value.strip().lower() in OFF_VALUES for value in given):
            continue
        if given:
            values[LIST_FIELDS.get(name, name)] = given if name in LIST_FIELDS else given[-1]
    if received.file is not None:
        values["file"] = received.file
    try:
        try:
            form = TranscriptionForm.model_validate(values)
        except ValidationError as error:
            if unsupported := unsupported_fields(error):
                raise HTTPException(
                    status.HTTP_400_BAD_REQUEST,
                    f"not supported by this service: {', '.join(repr(name[:64]) for name in unsupported)}; remove"
                    " the field (see the API reference at /docs for the fields it takes)",
                ) from None
            issues = [{**issue, "loc": ("body", *issue["loc"])} for issue in error.errors()]
            raise RequestValidationError(issues) from None
        if form.file is not None and form.file.size == 0:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "the uploaded file is empty")
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    return form


@router.post(
    "/v1/audio/transcriptions",
    response_model=TranscriptionJson | TranscriptionVerboseJson | DiarizedTranscription,
    responses={
        200: {
            "content": {"text/plain": {}, "text/vtt": {}, "text/event-stream": {}},
            "description": "The transcript, in response_format; with stream=true, server-sent events.",
        },
        **UPLOAD_ERRORS,
        **FUNDS_ERROR,
    },
    openapi_extra={"requestBody": multipart_request_body(TranscriptionForm)},
)
async def create_transcription(request: Request, key: Annotated[ApiKey, Depends(require_funds)]) -> Response:
    """Spool the upload (or later the URL's file), let the pipeline deployment transcribe it, charge, render."""
    config: AppConfig = request.app.state.config
    request_id = str(uuid.uuid4())
    spool_path = config.jobs.spool_dir / request_id
    streaming = False
    try:
        form = await receive_transcription_form(request, spool_path, config.limits.max_upload_bytes)
        check_model(form.model, config)
        pipeline_request = PipelineRequest(
            source_path=str(spool_path),
            url=form.url,
            max_bytes=config.limits.max_upload_bytes,
            options=form.transcription_options(),
            diarization=form.diarization_options(),
            stream_text=form.stream,
            interactive=True,
        )
        charge = Charge(request, request_id, key, charge_details(request, key, form), spool_path)
        if form.stream:
            response = await stream_transcription(request, pipeline_request, charge)
            streaming = True  # the stream removes the spooled file when it ends
            return response
        pipeline = request.app.state.pipeline
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: pipeline.transcribe.remote(pipeline_request), "a synchronous request", attempts=2
        )
        await charge(result)
    finally:
        if not streaming:
            remove_spooled(spool_path)  # and a decoded copy left by a pipeline replica that died
    return render(result, form.response_format, form.timestamp_granularities)


def charge_details(request: Request, key: ApiKey, form: TranscriptionForm) -> ChargeDetails:
    """How a request of this form is billed: the key's price, the model id asked for."""
    return ChargeDetails(
        task=form.task.value,
        model=form.model,
        rate_per_min=price_of(request, key).rate_per_min,
        profanity_filter=form.profanity_filter,
    )


class Charge:
    """Charges one synchronous request's completed work, once (by request id)."""

    def __init__(self, request: Request, request_id: str, key: ApiKey, details: ChargeDetails, source: Path) -> None:
        self.ledger, self.request_id, self.owner = request.app.state.ledger, request_id, key.owner
        self.details, self.source = details, source

    async def __call__(self, result: PipelineResult) -> None:
        details = self.details.completed(result.language, self.source)
        await self.ledger.charge.remote(self.request_id, self.owner, result.duration, details)
