"""`POST /v1/audio/transcriptions`: synchronous transcription."""

from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request, status
from fastapi.responses import Response

from serve_app.formatting import render
from serve_app.pipeline import TranscriptionPipeline
from serve_app.schemas import ErrorResponse, Task, TranscriptionForm, TranscriptionJson, TranscriptionVerboseJson

router = APIRouter(tags=["transcriptions"])


def get_pipeline(request: Request) -> TranscriptionPipeline:
    return request.app.state.pipeline


def reject_unsupported(form: TranscriptionForm) -> None:
    """400 for the features that are not built yet."""
    if form.task == Task.diarize:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "task=diarize is not available yet: use task=transcribe")
    if form.url is not None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "url input is not supported yet: upload the file instead")


def upload_too_large(limit_bytes: int) -> HTTPException:
    return HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"file is too large: the limit is {limit_bytes} bytes")


def empty_upload() -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, "the uploaded file is empty")


@router.post(
    "/v1/audio/transcriptions",
    response_model=TranscriptionJson | TranscriptionVerboseJson,
    responses={
        200: {"content": {"text/plain": {}, "text/vtt": {}}, "description": "The transcript, in response_format."},
        400: {"model": ErrorResponse, "description": "The audio cannot be processed."},
        401: {"model": ErrorResponse},
        413: {"model": ErrorResponse},
    },
)
async def create_transcription(
    form: Annotated[TranscriptionForm, Form(media_type="multipart/form-data")],
    pipeline: Annotated[TranscriptionPipeline, Depends(get_pipeline)],
) -> Response:
    reject_unsupported(form)
    upload = form.file
    assert upload is not None  # the form's validator guarantees file or url
    if upload.size is not None and upload.size > pipeline.limits.max_upload_bytes:
        raise upload_too_large(pipeline.limits.max_upload_bytes)
    data = await upload.read()
    if not data:
        raise empty_upload()
    transcript = await pipeline.transcribe(data, form.transcription_options())
    return render(transcript, form.response_format, include_words=form.wants_words)
