"""The bodies of `POST /v1/audio/transcriptions/async` and of its polls."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from serve_app.rest.schemas._times import UtcDatetime


class JobCreated(BaseModel):
    job_id: str = Field(description="A UUID; poll GET /v1/audio/transcriptions/async/{job_id}.")
    status: Literal["in_progress"] = "in_progress"
    created_at: UtcDatetime


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
