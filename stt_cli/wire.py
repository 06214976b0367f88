"""The service's answers as this client reads them: its own small models of the wire, not the server's schemas,
so that `stt` imports nothing of the server. Tolerant by design: unknown fields are kept, not refused, so that a
newer service does not break an older client."""

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class ResponseFormat(StrEnum):
    """The `response_format` values the service accepts."""

    json = "json"
    text = "text"
    srt = "srt"
    verbose_json = "verbose_json"
    vtt = "vtt"
    diarized_json = "diarized_json"


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow")


class JobCreated(WireModel):
    """`POST /v1/audio/transcriptions/async`."""

    job_id: str


class JobObject(WireModel):
    """`GET /v1/audio/transcriptions/async/{job_id}`."""

    job_id: str
    status: str  # in_progress, complete or error
    progress: float = 0.0
    result: dict[str, Any] | str | None = None
    error: str | None = None


class ModelCard(WireModel):
    id: str
    owned_by: str = ""


class ModelList(WireModel):
    """`GET /v1/models`."""

    data: list[ModelCard]


class Balance(WireModel):
    """`GET /v1/billing/balance`."""

    balance: float
    rate_per_min: float
    currency: str
    unlimited: bool


class KeyBalance(WireModel):
    initial: float | None
    remaining: float | None
    currency: str


class AdminKey(WireModel):
    """A key as `GET /v1/admin/keys` lists it (never its secret)."""

    id: str
    name: str
    prefix: str | None = None
    static: bool
    revocable: bool
    revoked_at: str | None = None
    balance: KeyBalance
    rate_per_min: float
    requests_per_second: float | None = None
    max_running_jobs: int | None = None


class CreatedKey(AdminKey):
    key: str


class AdminKeyPage(WireModel):
    items: list[AdminKey]
    next_cursor: str | None
    has_more: bool


class CreditResult(WireModel):
    id: str
    credited: float
    balance: KeyBalance


class Voice(WireModel):
    id: str
    name: str
    created_at: int
    speech_s: float


class VoiceList(WireModel):
    data: list[Voice]
    last_id: str | None = None
    has_more: bool = False
