"""`POST /v1/listen`: Deepgram's pre-recorded transcription. The body (audio, or JSON with a `url`) goes through
the service's own intake: spooled, transcribed by the pipeline (a `url` fetched by its SSRF-safe fetcher), charged
once, and rendered in Deepgram's shape (`results`). With `callback`, the request is a job of the job machinery:
answered at once with its `request_id`, and its end POSTed to the callback in Deepgram's shape
(`callback_delivery`, the sender's format for this protocol's jobs)."""

import json
from dataclasses import dataclass

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job
from deployments.jobs.tracker import TooManyJobsError
from deployments.retry import retry_on_worker_loss
from deployments.types import AnalysisOptions, DiarizationOptions, PipelineResult, TranscriptionOptions
from serve_app.callbacks.target import check_callback_url
from serve_app.common.dependencies import FundedKey, KeyPrice, ServicesDependency
from serve_app.common.edge import PROTOCOL_KEY, Delivery
from serve_app.common.intake import Intake
from serve_app.deepgram._body import ListenBody, receive_body
from serve_app.deepgram._params import ListenOptions, listen_options
from serve_app.deepgram.config import DEEPGRAM
from serve_app.deepgram.errors import error_body
from serve_app.deepgram.results import created_now, render_listen

PROTOCOL = "deepgram"
router = APIRouter(tags=["deepgram"])


@dataclass(frozen=True)
class ListenRequest:
    """The request as the intake reads it (`serve_app.common.intake.AudioRequest`)."""

    options: ListenOptions
    url: str | None

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
async def listen(request: Request, key: FundedKey, price: KeyPrice, services: ServicesDependency) -> JSONResponse:
    """Transcribe the body's audio or URL; with `callback`, queue it and answer `{"request_id"}`."""
    config = services.config
    options = listen_options(request.query_params.multi_items(), DEEPGRAM.of(config).models)
    version = config.whisper.model
    if options.callback is not None:
        return await _submit(request, key.owner, key.max_running_jobs, price, services, options, version)
    with Intake(config, price) as intake:
        body = await receive_body(request, intake.spool_path, config.limits.max_sync_upload_bytes)
        work = ListenRequest(options, body.url)
        pipeline_request = intake.pipeline_request(work)
        charge = intake.charge(services.ledger, key.owner, work)
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: services.pipeline.transcribe.remote(pipeline_request), "a synchronous request", attempts=2
        )
        await charge(result)
    return JSONResponse(render_listen(result, options, intake.request_id, created_now(), body.sha256, version))


async def _submit(
    request: Request,
    owner: str,
    key_max_running: int | None,
    price: KeyPrice,
    services: ServicesDependency,
    options: ListenOptions,
    version: str,
) -> JSONResponse:
    config = services.config
    max_running = key_max_running or config.jobs.max_running_jobs_per_key
    if not await services.tracker.has_room.remote(owner, max_running):  # before reading a long upload for nothing
        raise _too_many_jobs(max_running)
    assert options.callback is not None
    await check_callback_url(options.callback, config.callbacks)  # refused now; each attempt checks it again
    with Intake(config, price) as intake:
        body: ListenBody = await receive_body(request, intake.spool_path, config.jobs.max_job_upload_bytes)
        if body.url is not None:  # refuse a non-public URL now; the job checks again when it fetches
            await services.pipeline.check_url.remote(body.url)
        render = {PROTOCOL_KEY: PROTOCOL, "options": options.model_dump(), "sha256": body.sha256, "version": version}
        job_request = intake.job_request(ListenRequest(options, body.url), render, options.callback)
        try:
            job: Job = await services.tracker.submit.remote(owner, job_request, intake.request_id, max_running)
        except TooManyJobsError as error:
            raise _too_many_jobs(error.args[0]) from None
        intake.hand_over()  # the job removes the spooled file when it is done
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
