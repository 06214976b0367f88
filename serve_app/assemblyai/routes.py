"""AssemblyAI's API, so that its SDK works unchanged but for `aai.settings.base_url`: uploads, transcripts
(the service's async jobs underneath: durable, kept `jobs.retention_s`, the key's running-job cap), their
exports, and LeMUR's task over the service's Analyzer. Errors are `{"error": ...}`, webhooks AssemblyAI's."""

import asyncio
import json
from datetime import date
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from deployments.analysis.errors import AnalysisError, AnalysisTimeout, analysis_error_message, analysis_failure
from deployments.jobs.records import Job
from deployments.jobs.tracker import JobRunningError
from deployments.types import Analysis, AnalysisOptions, PipelineResult
from serve_app.assemblyai import lemur, redacted_audio, rendering
from serve_app.assemblyai.config import ASSEMBLYAI
from serve_app.assemblyai.schemas import (
    LEMUR_FIELDS,
    TRANSCRIPT_FIELDS,
    LemurTaskParams,
    TranscriptParams,
    refuse_unsupported,
)
from serve_app.assemblyai.translation import PROTOCOL, AudioForm, Stored, is_ours
from serve_app.assemblyai.uploads import Sweeper, Uploads, upload_id_in, upload_url
from serve_app.assemblyai.webhooks import webhook
from serve_app.callbacks.target import check_callback_url
from serve_app.common.dependencies import (
    ConfigDependency,
    CurrentKey,
    FundedKey,
    KeyPrice,
    ServicesDependency,
    TrackerDependency,
    require_api_key,
)
from serve_app.common.edge import Edge, ErrorShape
from serve_app.common.errors import body_issues
from serve_app.common.intake import Intake
from serve_app.common.job_submission import Submission, submit_job
from serve_app.common.services import Services
from serve_app.common.upload import read_json_body
from serve_app.config import AppConfig

router = APIRouter(dependencies=[Depends(require_api_key)], include_in_schema=False)
"""Not in /openapi.json: the API is AssemblyAI's, documented by AssemblyAI and docs/api/assemblyai.md."""
MAX_JSON_BYTES = 2 * 1024**2
_sweeper = Sweeper()  # this replica's: expired uploads go at most once a minute


def error_body(_: int, message: str) -> dict[str, str]:
    return {"error": message}


def _uploads(config: AppConfig) -> Uploads:
    return Uploads(config.storage.spool_dir, ASSEMBLYAI.of(config).upload_ttl_s, config.jobs.max_job_upload_bytes)


# ---- bodies ----

ParamsT = TypeVar("ParamsT", bound=BaseModel)


async def read_json(request: Request, fields: set[str], model: type[ParamsT]) -> ParamsT:
    """The JSON object, capped while reading; a field asking for what the service does not do is a 400."""
    values = await read_json_body(request, MAX_JSON_BYTES)
    if not isinstance(values, dict):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the body is not a JSON object")
    refuse_unsupported(values, fields)
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise RequestValidationError(body_issues(error)) from None


# ---- uploads and transcripts ----


@router.post("/v2/upload")
async def upload(request: Request, key: FundedKey, config: ConfigDependency) -> dict[str, str]:
    """The body's bytes to the spool; the URL a transcript names to use them."""
    uploads = _uploads(config)
    await _sweeper.maybe_sweep(uploads)
    upload_id = await uploads.receive(request, key.owner)
    return {"upload_url": upload_url(request, upload_id)}


@router.post("/v2/transcript")
async def create_transcript(request: Request, key: FundedKey, services: ServicesDependency) -> dict[str, Any]:
    """Queue a job; returns the transcript `queued`, before any decoding."""
    config = services.config
    params = await read_json(request, TRANSCRIPT_FIELDS, TranscriptParams)
    upload_id = upload_id_in(params.audio_url, request)
    form = AudioForm(params, ASSEMBLYAI.of(config), url=None if upload_id else params.audio_url)
    stored, uploads = form.stored(), _uploads(config)

    async def read(intake: Intake) -> Submission:  # an upload's file becomes the job's; a URL is checked after
        await _sweeper.maybe_sweep(uploads)
        intake.check_model(form.model)
        if upload_id is not None:
            uploads.take_for_job(key.owner, upload_id, intake.spool_path)
        return Submission(form, stored.render())

    check_webhook = partial(_check_webhook, config=config)
    job = await submit_job(services, key, read, callback_url=params.webhook_url, check_callback=check_webhook)
    return rendering.transcript_object(job, stored, None)


async def _check_webhook(url: str, config: AppConfig) -> None:
    try:
        await check_callback_url(url, config.callbacks)
    except HTTPException as error:
        raise HTTPException(error.status_code, str(error.detail).replace("callback_url", "webhook_url", 1)) from None


async def _job(transcript_id: str, owner: str, services: Services) -> tuple[Job, Stored]:
    """The key's AssemblyAI transcript, or 404."""
    job = await asyncio.to_thread(services.jobs.get, transcript_id, owner) if services.jobs else None
    if job is None or not is_ours(job.request.render):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"transcript {transcript_id[:64]!r} not found")
    return job, Stored.model_validate(job.request.render)


async def _completed(transcript_id: str, owner: str, services: Services) -> tuple[PipelineResult, Stored]:
    job, stored = await _job(transcript_id, owner, services)
    if job.transcript is None:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"transcript {transcript_id[:64]!r} is {rendering.status_of(job)}: only a completed transcript has this",
        )
    return job.transcript, stored


@router.get("/v2/transcript/{transcript_id}")
async def get_transcript(transcript_id: str, key: CurrentKey, services: ServicesDependency) -> dict[str, Any]:
    job, stored = await _job(transcript_id, key.owner, services)
    callback = await asyncio.to_thread(services.jobs.callback, job) if services.jobs else None
    return rendering.transcript_object(job, stored, callback)


@router.delete("/v2/transcript/{transcript_id}")
async def delete_transcript(
    transcript_id: str, key: CurrentKey, services: ServicesDependency, tracker: TrackerDependency
) -> dict[str, Any]:
    """Deletes the job's record (and its result) now; AssemblyAI would keep a redacted record, this service keeps
    nothing."""
    job, stored = await _job(transcript_id, key.owner, services)
    try:
        await tracker.delete.remote(job.job_id, key.owner)
    except JobRunningError:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"transcript {transcript_id[:64]!r} is still processing: delete it when done"
        ) from None
    return rendering.deleted_object(job, stored)


@router.get("/v2/transcript/{transcript_id}/sentences")
async def get_sentences(transcript_id: str, key: CurrentKey, services: ServicesDependency) -> dict[str, Any]:
    result, stored = await _completed(transcript_id, key.owner, services)
    return _spans("sentences", rendering.sentences(result, stored), transcript_id, result, stored)


@router.get("/v2/transcript/{transcript_id}/paragraphs")
async def get_paragraphs(transcript_id: str, key: CurrentKey, services: ServicesDependency) -> dict[str, Any]:
    result, stored = await _completed(transcript_id, key.owner, services)
    return _spans("paragraphs", rendering.paragraphs(result, stored), transcript_id, result, stored)


def _spans(
    name: str, spans: list[dict[str, Any]], transcript_id: str, result: PipelineResult, stored: Stored
) -> dict[str, Any]:
    return {
        name: spans,
        "id": transcript_id,
        "confidence": rendering.mean_confidence(rendering.timed_words(result, stored)),
        "audio_duration": result.duration,
        "speech_model_used": stored.model,
    }


CharsPerCaption = Annotated[int | None, Query(ge=1, le=1000)]


@router.get("/v2/transcript/{transcript_id}/srt", response_class=PlainTextResponse)
async def get_srt(
    transcript_id: str, key: CurrentKey, services: ServicesDependency, chars_per_caption: CharsPerCaption = None
) -> Response:
    result, stored = await _completed(transcript_id, key.owner, services)
    return PlainTextResponse(rendering.subtitles(result, stored, "srt", chars_per_caption))


@router.get("/v2/transcript/{transcript_id}/vtt", response_class=PlainTextResponse)
async def get_vtt(
    transcript_id: str, key: CurrentKey, services: ServicesDependency, chars_per_caption: CharsPerCaption = None
) -> Response:
    result, stored = await _completed(transcript_id, key.owner, services)
    return Response(rendering.subtitles(result, stored, "vtt", chars_per_caption), media_type="text/vtt")


@router.get("/v2/transcript/{transcript_id}/word-search")
async def word_search(
    transcript_id: str, key: CurrentKey, services: ServicesDependency, words: Annotated[str, Query(max_length=2000)]
) -> dict[str, Any]:
    result, _ = await _completed(transcript_id, key.owner, services)
    terms = [term.strip() for term in words.split(",") if term.strip()]
    if not terms or any(len(term.split()) > 5 for term in terms):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "words: comma-separated words or phrases of up to 5 words")
    matches = rendering.word_search(result, terms)
    return {"id": transcript_id, "total_count": sum(match["count"] for match in matches), "matches": matches}


@router.get("/v2/transcript")
async def list_transcripts(
    request: Request,
    key: CurrentKey,
    services: ServicesDependency,
    limit: Annotated[int, Query(ge=1, le=200)] = 10,
    status_: Annotated[Literal["queued", "processing", "completed", "error"] | None, Query(alias="status")] = None,
    created_on: date | None = None,
    before_id: Annotated[str | None, Query(max_length=64)] = None,
    after_id: Annotated[str | None, Query(max_length=64)] = None,
    throttled_only: bool = False,
) -> dict[str, Any]:
    """The key's transcripts, newest first, a page of `limit`; `before_id` pages to older ones, `after_id` to
    newer ones. Nothing is ever throttled here, so `throttled_only` lists none."""
    owned = await asyncio.to_thread(services.jobs.owned, key.owner) if services.jobs else []
    jobs = [
        job
        for job in owned
        if is_ours(job.request.render)
        and (status_ is None or rendering.status_of(job) == status_)
        and (created_on is None or job.created_at.date() == created_on)
        and not throttled_only
    ]
    ids = [job.job_id for job in jobs]
    start, end = 0, len(jobs)
    if before_id is not None:
        start = ids.index(before_id) + 1 if before_id in ids else len(jobs)
    if after_id is not None:
        end = ids.index(after_id) if after_id in ids else 0
    page = jobs[start:end][:limit] if after_id is None else jobs[start:end][-limit:]
    first, last = (ids.index(page[0].job_id), ids.index(page[-1].job_id)) if page else (start, start - 1)
    base = request.url.remove_query_params(["before_id", "after_id"])
    older = str(base.include_query_params(before_id=page[-1].job_id)) if page and last + 1 < len(jobs) else None
    newer = str(base.include_query_params(after_id=page[0].job_id)) if page and first > 0 else None
    return {
        "page_details": {
            "limit": limit,
            "result_count": len(page),
            "current_url": str(request.url),
            "prev_url": older,
            "next_url": newer,
        },
        "transcripts": [
            rendering.list_item(job, Stored.model_validate(job.request.render), _resource_url(request, job.job_id))
            for job in page
        ],
    }


def _resource_url(request: Request, transcript_id: str) -> str:
    return str(request.url.replace(path=f"/v2/transcript/{transcript_id}", query=""))


# ---- LeMUR ----


@router.post("/lemur/v3/generate/task")
async def lemur_task(request: Request, key: FundedKey, price: KeyPrice, services: ServicesDependency) -> dict[str, Any]:
    """The prompt answered over the transcripts by the service's LLM; charged by its tokens."""
    params = await read_json(request, LEMUR_FIELDS, LemurTaskParams)
    config = services.config
    lemur.check(params, config)
    if params.transcript_ids:
        ids = params.transcript_ids
        jobs = [await asyncio.to_thread(services.jobs.get, i, key.owner) if services.jobs else None for i in ids]
        ours = [job if job is not None and is_ours(job.request.render) else None for job in jobs]
        transcript = lemur.joined(lemur.finished(ours, ids))
    else:
        transcript = lemur.text_transcript(params.input_text or "")
    options = AnalysisOptions(prompt=lemur.prompt_of(params), max_output_tokens=lemur.max_output_tokens(params, config))
    try:
        analysis: Analysis = await services.pipeline.analyze.remote(transcript, options)
    except AnalysisError as error:
        failure = analysis_failure(error)
        if failure is None:
            raise
        if isinstance(failure, AnalysisTimeout):
            raise HTTPException(status.HTTP_504_GATEWAY_TIMEOUT, "the LLM did not answer in time; try again") from None
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, analysis_error_message(failure)) from None
    request_id = await lemur.charge(
        services.ledger, key.owner, price, params, analysis.llm_input_tokens, analysis.llm_output_tokens
    )
    return {
        "request_id": request_id,
        "response": analysis.llm_output if isinstance(analysis.llm_output, str) else json.dumps(analysis.llm_output),
        "usage": {"input_tokens": analysis.llm_input_tokens, "output_tokens": analysis.llm_output_tokens},
    }


api = APIRouter(include_in_schema=False)
for part in (router, redacted_audio.router, redacted_audio.files):
    api.include_router(part)
EDGE = Edge(api, errors=ErrorShape(("/v2", "/lemur"), error_body), callbacks=(PROTOCOL, webhook), config=ASSEMBLYAI)
