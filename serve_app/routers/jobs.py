"""`POST /v1/audio/transcriptions/async` and `GET /v1/audio/transcriptions/async/{job_id}`."""

import uuid
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse

from deployments.config import JobsConfig
from deployments.jobs.records import Job, JobRequest
from deployments.jobs.tracker import TooManyJobsError
from serve_app.auth import FUNDS_ERROR, ApiKey, require_api_key, require_funds
from serve_app.finished_jobs import FinishedJobs
from serve_app.formatting import render_body
from serve_app.routers.transcriptions import UPLOAD_ERRORS, charge_details, check_model, receive_transcription_form
from serve_app.schemas import (
    ErrorResponse,
    JobCreated,
    JobObject,
    ResponseFormat,
    TimestampGranularity,
    TranscriptionForm,
    multipart_request_body,
)

router = APIRouter(tags=["async jobs"])

JOB_NOT_FOUND = "Job not found"


@router.post(
    "/v1/audio/transcriptions/async",
    response_model=JobCreated,
    responses={**UPLOAD_ERRORS, **FUNDS_ERROR},
    openapi_extra={"requestBody": multipart_request_body(TranscriptionForm)},
)
async def create_job(request: Request, key: Annotated[ApiKey, Depends(require_funds)]) -> JobCreated:
    """Stream the upload to the spool and queue the job; returns before any decoding or inference."""
    config: JobsConfig = request.app.state.config.jobs
    tracker = request.app.state.tracker
    max_running = key.max_running_jobs or config.max_running_jobs_per_key
    if not await tracker.has_room.remote(key.owner, max_running):  # before reading a long upload for nothing
        raise too_many_jobs(max_running)
    job_id = str(uuid.uuid4())
    spool_path = config.spool_dir / job_id
    form = await receive_transcription_form(request, spool_path, config.max_upload_bytes)
    try:
        check_model(form.model, request.app.state.config)
        if form.stream:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST, "stream=true is for POST /v1/audio/transcriptions; poll jobs instead"
            )
        if form.url is not None:  # refuse a non-public URL now; the job checks again when it fetches
            await request.app.state.pipeline.check_url.remote(form.url)
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    job_request = JobRequest(
        source_path=str(spool_path),
        url=form.url,
        options=form.transcription_options(),
        diarization=form.diarization_options(),
        response_format=form.response_format.value,
        timestamp_granularities=[granularity.value for granularity in form.timestamp_granularities],
        charge=charge_details(request, key, form),
    )
    try:
        job: Job = await tracker.submit.remote(key.owner, job_request, job_id, max_running)
    except TooManyJobsError as error:
        spool_path.unlink(missing_ok=True)
        raise too_many_jobs(error.args[0]) from None
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    return JobCreated(job_id=job.job_id, created_at=job.created_at)


def too_many_jobs(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"too many running jobs: this key may have {limit} at once; wait for current jobs to finish",
    )


@router.get(
    "/v1/audio/transcriptions/async/{job_id}",
    response_model=JobObject,
    responses={404: {"model": ErrorResponse}},
)
async def get_job(request: Request, job_id: str, key: Annotated[ApiKey, Depends(require_api_key)]) -> Response:
    # A finished job's answer is kept by this replica (see serve_app.finished_jobs): polling it again asks
    # nothing of the tracker. Each answer is serialised once, here, as FastAPI would serialise a JobObject.
    finished: FinishedJobs = request.app.state.finished_jobs
    if (body := finished.get(job_id, key.owner)) is not None:
        return Response(body, media_type=JSONResponse.media_type)
    job: Job | None = await request.app.state.tracker.get.remote(job_id, key.owner)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, JOB_NOT_FOUND)
    answer = JobObject(
        job_id=job.job_id,
        status=job.status.value,
        created_at=job.created_at,
        completed_at=job.completed_at,
        progress=job.progress,
        result=_rendered(job),
        error=job.error,
    )
    response = JSONResponse(answer.model_dump(mode="json"))
    if job.completed_at is not None:
        retention = timedelta(seconds=request.app.state.config.jobs.retention_s)
        finished.keep(job_id, key.owner, response.body, job.completed_at + retention)
    return response


def _rendered(job: Job) -> dict | str | None:
    """The result in the format the job was submitted with, rendered now from the stored transcript."""
    if job.transcript is None:
        return job.result  # None while running or failed; a body stored by an earlier version otherwise
    granularities = [TimestampGranularity(value) for value in job.request.timestamp_granularities]
    if not granularities:  # stored by a version before granularities were kept
        granularities = [TimestampGranularity.word] if job.request.include_words else [TimestampGranularity.segment]
    return render_body(job.transcript, ResponseFormat(job.request.response_format), granularities)
