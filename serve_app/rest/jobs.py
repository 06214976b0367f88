"""`POST /v1/audio/transcriptions/async` and `GET /v1/audio/transcriptions/async/{job_id}`."""

import asyncio
from datetime import timedelta
from functools import partial

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse

from deployments.callbacks.store import CallbackStatus
from deployments.jobs.records import Job
from serve_app.callbacks.target import check_callback_url
from serve_app.common.auth import FUNDS_ERROR
from serve_app.common.dependencies import CurrentKey, FundedKey, ServicesDependency
from serve_app.common.errors import UPLOAD_ERRORS, ErrorResponse
from serve_app.common.intake import Intake
from serve_app.common.job_submission import Submission, submit_job
from serve_app.common.voices import known_voices
from serve_app.rendering.job_answer import JobObject, job_answer
from serve_app.rest.form_intake import read_transcription_form
from serve_app.rest.schemas.audio_form import multipart_request_body
from serve_app.rest.schemas.jobs import JobCreated
from serve_app.rest.schemas.transcription_form import TranscriptionForm

router = APIRouter(tags=["async jobs"])

JOB_NOT_FOUND = "Job not found"
NO_CALLBACK_SECRET = (
    "callback_url needs a secret to sign callbacks with: the operator must configure STT_CALLBACK_SECRET or this"
    " key's callback_secret"
)


@router.post(
    "/v1/audio/transcriptions/async",
    response_model=JobCreated,
    responses={**UPLOAD_ERRORS, **FUNDS_ERROR},
    openapi_extra={"requestBody": multipart_request_body(TranscriptionForm)},
)
async def create_job(request: Request, key: FundedKey, services: ServicesDependency) -> JobCreated:
    """Stream the upload to the spool and queue the job; returns before any decoding or inference."""
    config = services.config

    async def read(intake: Intake) -> Submission:
        voices = partial(known_voices, services, key.owner)
        form = await read_transcription_form(
            request, intake, config.jobs.max_job_upload_bytes, synchronous=False, voices=voices, owner=key.owner
        )
        if form.stream:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST, "stream=true is for POST /v1/audio/transcriptions; poll jobs instead"
            )
        return Submission(form, form.render_spec().stored(), form.callback_url)

    async def check_callback(url: str) -> None:  # a callback of ours is signed: there must be a secret to sign it
        if services.callback_secret_of(key) is None:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, NO_CALLBACK_SECRET)
        await check_callback_url(url, config.callbacks)

    job = await submit_job(services, key, read, check_callback=check_callback)
    return JobCreated(job_id=job.job_id, created_at=job.created_at)


@router.get(
    "/v1/audio/transcriptions/async/{job_id}",
    response_model=JobObject,
    responses={404: {"model": ErrorResponse}},
)
async def get_job(job_id: str, key: CurrentKey, services: ServicesDependency) -> Response:
    # Polls never go through the tracker: this replica reads the job from the store (deployments/jobs/reader.py),
    # so poll capacity grows with the ingress replicas and finished jobs answer while the tracker restarts. A
    # finished job's answer is kept by this replica (see serve_app.common.finished_jobs): polling it again reads
    # nothing. Each answer is serialised once, here, as FastAPI would serialise a JobObject.
    if (body := services.finished_jobs.get(job_id, key.owner)) is not None:
        return Response(body, media_type=JSONResponse.media_type)
    if services.jobs is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, JOB_NOT_FOUND)
    job: Job | None = await asyncio.to_thread(services.jobs.get, job_id, key.owner)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, JOB_NOT_FOUND)
    callback = await asyncio.to_thread(services.jobs.callback, job) if job.request.callback_url else None
    response = Response(job_answer(job, callback), media_type=JSONResponse.media_type)
    if job.completed_at is not None and (callback is None or callback.status != CallbackStatus.pending):
        retention = timedelta(seconds=services.config.jobs.retention_s)  # it changes no more
        services.finished_jobs.keep(job_id, key.owner, bytes(response.body), job.completed_at + retention)
    return response
