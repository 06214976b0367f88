"""`POST /v1/listen`: Deepgram's pre-recorded transcription. The body (audio, or JSON with a `url`) goes through
the service's own synchronous flow (`serve_app.common.synchronous`): spooled, transcribed by the pipeline (a `url`
fetched by its SSRF-safe fetcher), charged once, and rendered in Deepgram's shape (`results`). With `callback`,
the request is a job of the job machinery (`serve_app.common.job_submission`): answered at once with its
`request_id`, and its end POSTed to the callback in Deepgram's shape (`callback_delivery`, the sender's format for
this protocol's jobs)."""

import json
from dataclasses import dataclass
from functools import partial

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job
from deployments.types import AnalysisOptions, DiarizationOptions, PipelineResult, TranscriptionOptions
from serve_app.common.auth import ApiKey
from serve_app.common.dependencies import FundedKey, ServicesDependency
from serve_app.common.edge import PROTOCOL_KEY, Delivery
from serve_app.common.intake import Intake
from serve_app.common.job_submission import Submission, submit_job
from serve_app.common.services import Services
from serve_app.common.synchronous import transcribe_synchronously
from serve_app.deepgram._body import receive_body
from serve_app.deepgram._params import ListenOptions, listen_options
from serve_app.deepgram.config import DEEPGRAM
from serve_app.deepgram.errors import error_body
from serve_app.deepgram.results import created_now, render_listen

PROTOCOL = "deepgram"
router = APIRouter(tags=["deepgram"])


@dataclass(frozen=True)
class ListenRequest:
    """The request as the intake reads it (`serve_app.common.intake.AudioRequest`), and its audio's SHA-256
    (None: a URL)."""

    options: ListenOptions
    url: str | None
    sha256: str | None = None

    @property
    def model(self) -> str:
        return self.options.model

    def transcription_options(self) -> TranscriptionOptions:
        return self.options.transcription_options()

    def diarization_options(self) -> DiarizationOptions | None:
        return self.options.diarization_options()

    def analysis_options(self) -> AnalysisOptions | None:
        return None


@router.post("/v1/listen")
async def listen(request: Request, key: FundedKey, services: ServicesDependency) -> JSONResponse:
    """Transcribe the body's audio or URL; with `callback`, queue it and answer `{"request_id"}`."""
    config = services.config
    options = listen_options(request.query_params.multi_items(), DEEPGRAM.of(config).models)
    version = config.whisper.model
    if options.callback is not None:
        return await _submit(request, key, services, options, version)
    read = partial(_read, request, options=options, max_bytes=config.limits.max_sync_upload_bytes)

    def render(result: PipelineResult, work: ListenRequest, request_id: str) -> JSONResponse:
        return JSONResponse(render_listen(result, options, request_id, created_now(), work.sha256, version))

    return await transcribe_synchronously(services, key, read, render)


async def _read(request: Request, intake: Intake, options: ListenOptions, max_bytes: int) -> ListenRequest:
    body = await receive_body(request, intake.spool_path, max_bytes)
    return ListenRequest(options, body.url, body.sha256)


async def _submit(
    request: Request, key: ApiKey, services: Services, options: ListenOptions, version: str
) -> JSONResponse:
    async def read(intake: Intake) -> Submission:
        work = await _read(request, intake, options, services.config.jobs.max_job_upload_bytes)
        render = {PROTOCOL_KEY: PROTOCOL, "options": options.model_dump(), "sha256": work.sha256, "version": version}
        return Submission(work, render)

    job = await submit_job(services, key, read, callback_url=options.callback, too_many=_too_many_jobs)
    return JSONResponse({"request_id": job.job_id})


def _too_many_jobs(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"too many callback requests running: this key may have {limit} at once; wait for one to finish",
    )


def callback_delivery(job: Job, _: CallbackState) -> Delivery:
    """A finished callback job's POST: the response Deepgram would have answered, or its error body. Not
    signed (Deepgram's callbacks are not): a receiver may carry its own secret in the callback URL."""
    render = job.request.render
    if job.transcript is None:
        body = error_body(status.HTTP_400_BAD_REQUEST, job.error or "the request failed", job.job_id)
    else:
        options = ListenOptions.model_validate(render["options"])
        created = job.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        body = render_listen(job.transcript, options, job.job_id, created, render.get("sha256"), render["version"])
    return Delivery(json.dumps(body, separators=(",", ":")).encode(), signed=False)
