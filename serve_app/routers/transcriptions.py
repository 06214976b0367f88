"""`POST /v1/audio/transcriptions`: synchronous transcription."""

import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError

from deployments.types import PipelineRequest, PipelineResult
from serve_app.auth import FUNDS_ERROR, ApiKey, require_funds
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
from serve_app.upload import receive_form

router = APIRouter(tags=["transcriptions"])

UPLOAD_ERRORS = {
    400: {"model": ErrorResponse, "description": "The form or the audio cannot be processed."},
    413: {"model": ErrorResponse, "description": "The file or a form field is too large."},
    415: {"model": ErrorResponse, "description": "The body is not a form."},
    422: {"model": ValidationErrorResponse, "description": "A form field is invalid."},
}
LIST_FIELDS = {
    "timestamp_granularities[]": "timestamp_granularities[]",
    "timestamp_granularities": "timestamp_granularities[]",
}


async def receive_transcription_form(request: Request, spool_path: Path, max_file_bytes: int) -> TranscriptionForm:
    """Stream the form in (the file to `spool_path`) and validate it; on any error the spool file is gone."""
    received = await receive_form(request, spool_path, max_file_bytes)
    values: dict[str, object] = {}
    for name, given in received.fields.items():
        given = [value for value in given if value != ""]  # an empty field means "not given", as in HTML forms
        if given:
            values[LIST_FIELDS.get(name, name)] = given if name in LIST_FIELDS else given[-1]
    if received.file is not None:
        values["file"] = received.file
    try:
        try:
            form = TranscriptionForm.model_validate(values)
        except ValidationError as error:
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
        200: {"content": {"text/plain": {}, "text/vtt": {}}, "description": "The transcript, in response_format."},
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
    try:
        form = await receive_transcription_form(request, spool_path, config.limits.max_upload_bytes)
        diarization = form.diarization_options()
        pipeline_request = PipelineRequest(
            source_path=str(spool_path),
            url=form.url,
            max_bytes=config.limits.max_upload_bytes,
            options=form.transcription_options(),
            diarization=diarization,
        )
        result: PipelineResult = await request.app.state.pipeline.transcribe.remote(pipeline_request)
    finally:
        spool_path.unlink(missing_ok=True)
    task = "diarize" if diarization is not None else "transcribe"
    await request.app.state.ledger.charge.remote(request_id, key.owner, result.duration, task)  # completed work, once
    return render(result, form.response_format, include_words=form.wants_words)
