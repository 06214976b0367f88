"""The asynchronous job record: what the tracker stores and what clients poll (rendered by the HTTP layer)."""

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from deployments.billing.ledger import ChargeDetails
from deployments.types import AnalysisOptions, DiarizationOptions, PipelineResult, TranscriptionOptions


class JobStatus(StrEnum):
    in_progress = "in_progress"
    complete = "complete"
    error = "error"


class JobRequest(BaseModel):
    """Everything needed to (re)run a job after a restart: the spooled input and the client's choices."""

    source_path: str
    url: str | None = Field(None, description="Fetched into source_path when the job runs.")
    options: TranscriptionOptions
    diarization: DiarizationOptions | None = Field(None, description="Set for task=diarize.")
    analysis: AnalysisOptions | None = Field(None, description="What the Analyzer should do with the transcript.")
    render: dict[str, Any] = Field(
        description="The edge's rendering choices (how it renders the result when the job is polled), stored and"
        " returned as given: the jobs never read them."
    )
    charge: ChargeDetails | None = Field(
        None, description="How to bill the job (price, model); language and size are filled in when it is done."
    )
    callback_url: str | None = Field(
        None, description="Where the job object is POSTed when the job ends (deployments/callbacks/store.py)."
    )


class Job(BaseModel):
    job_id: str
    owner: str = Field(description="SHA-256 of the API key: the store never holds a key itself.")
    status: JobStatus = JobStatus.in_progress
    created_at: datetime
    completed_at: datetime | None = None
    progress: float = 0.0
    transcript: PipelineResult | None = Field(
        None, description="The domain result; the HTTP layer renders it as `request.render` says when polled."
    )
    error: str | None = None
    audio_seconds: float | None = None
    request: JobRequest


def owner_of(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()
