"""`POST /v1/audio/transcriptions/async` and `GET /v1/audio/transcriptions/async/{job_id}`."""

import asyncio
import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request, status

from deployments.job_tracker import TooManyJobsError
from deployments.jobs import Job, JobRequest, owner_of
from serve_app.auth import require_api_key
from serve_app.config import JobsConfig
from serve_app.routers.transcriptions import empty_upload, reject_unsupported, upload_too_large
from serve_app.schemas import ErrorResponse, JobCreated, JobObject, TranscriptionForm
from serve_app.spool import UploadTooLargeError, spool_upload

router = APIRouter(tags=["async jobs"])

JOB_NOT_FOUND = "Job not found"


@router.post(
    "/v1/audio/transcriptions/async",
    response_model=JobCreated,
    responses={400: {"model": ErrorResponse}, 413: {"model": ErrorResponse}, 429: {"model": ErrorResponse}},
)
async def create_job(
    request: Request,
    form: Annotated[TranscriptionForm, Form(media_type="multipart/form-data")],
    api_key: Annotated[str, Depends(require_api_key)],
) -> JobCreated:
    """Spool the upload to disk and queue the job; returns before any decoding or inference."""
    reject_unsupported(form)
    config: JobsConfig = request.app.state.jobs_config
    job_id = str(uuid.uuid4())
    suffix = Path(form.file.filename or "").suffix[:16]
    spool_path = Path(config.state_dir).expanduser() / "spool" / f"{job_id}{suffix}"
    try:
        size = await asyncio.to_thread(spool_upload, form.file.file, spool_path, config.max_upload_bytes)
    except UploadTooLargeError:
        raise upload_too_large(config.max_upload_bytes) from None
    if size == 0:
        spool_path.unlink(missing_ok=True)
        raise empty_upload()
    job_request = JobRequest(
        source_path=str(spool_path),
        options=form.transcription_options(),
        response_format=form.response_format.value,
        include_words=form.wants_words,
    )
    try:
        job: Job = await request.app.state.tracker.submit.remote(owner_of(api_key), job_request, job_id)
    except TooManyJobsError as error:
        spool_path.unlink(missing_ok=True)
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"too many running jobs: this key may have {error.args[0]} at once; wait for current jobs to finish",
        ) from None
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    return JobCreated(job_id=job.job_id, created_at=job.created_at)


@router.get(
    "/v1/audio/transcriptions/async/{job_id}",
    response_model=JobObject,
    responses={404: {"model": ErrorResponse}},
)
async def get_job(request: Request, job_id: str, api_key: Annotated[str, Depends(require_api_key)]) -> JobObject:
    job: Job | None = await request.app.state.tracker.get.remote(job_id, owner_of(api_key))
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, JOB_NOT_FOUND)
    return JobObject(**job.model_dump(include=set(JobObject.model_fields)))
