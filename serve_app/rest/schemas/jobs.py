"""The body of `POST /v1/audio/transcriptions/async`; its polls answer a `serve_app.rendering.job_answer.JobObject`."""

from typing import Literal

from pydantic import BaseModel, Field

from serve_app.rendering.times import UtcDatetime


class JobCreated(BaseModel):
    job_id: str = Field(description="A UUID; poll GET /v1/audio/transcriptions/async/{job_id}.")
    status: Literal["in_progress"] = "in_progress"
    created_at: UtcDatetime
