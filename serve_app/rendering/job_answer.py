"""A job's public answer: the job object its poll returns, and the body its callback sends (serve_app/callbacks/),
one serialisation for both, the result rendered as the job was submitted to have it."""

from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job
from serve_app.rendering.response_formats import RenderSpec, render_body
from serve_app.rendering.times import UtcDatetime


class CallbackObject(BaseModel):
    """The delivery of a job's end to its `callback_url`."""

    status: Literal["pending", "delivered", "failed"] = Field(
        description="pending: not yet answered with a 2xx (the job runs, or attempts continue with backoff);"
        " delivered: a 2xx within the timeout; failed: no more attempts."
    )
    attempts: int = Field(description="Attempts made so far.")
    last_status: int | None = Field(description="The HTTP status of the last attempt; null: none, or no answer.")


class JobObject(BaseModel):
    """An asynchronous job as clients poll it."""

    job_id: str
    status: Literal["in_progress", "complete", "error"]
    created_at: UtcDatetime
    completed_at: UtcDatetime | None
    progress: float = Field(description="Share of the audio processed, 0.0 to 1.0.")
    result: dict[str, Any] | str | None = Field(
        description="The transcription in the submitted response_format: an object for json and verbose_json,"
        " a string for text, srt and vtt; for task=diarize always a DiarizedTranscription object; with an LLM"
        " `prompt`, an LLMResult object."
    )
    error: str | None = Field(description="Why the job failed, when status is error.")
    callback: CallbackObject | None = Field(
        None,
        description="Only for a job submitted with a `callback_url`: the delivery of its end to that address.",
    )


def job_answer(job: Job, callback: CallbackState | None) -> bytes:
    """The job object as its poll answers it, serialised as FastAPI would serialise a JobObject; also the body
    its callback sends (serve_app/callbacks/). `callback` is left out for a job without a callback_url."""
    answer = JobObject(
        job_id=job.job_id,
        status=job.status.value,
        created_at=job.created_at,
        completed_at=job.completed_at,
        progress=job.progress,
        result=_rendered(job),
        error=job.error,
        callback=CallbackObject.model_validate(callback.model_dump()) if callback is not None else None,
    )
    body = answer.model_dump(mode="json", exclude={"callback"} if callback is None else set())
    return bytes(JSONResponse(body).body)


def _rendered(job: Job) -> dict[str, Any] | str | None:
    """The result as the job was submitted to have it, rendered now from the stored transcript; None while
    the job runs, or when it failed."""
    if job.transcript is None:
        return None
    spec = RenderSpec.model_validate(job.request.render)
    return render_body(job.transcript, spec.response_format, spec.timestamp_granularities, spec.subtitles)
