"""The bodies of the admin API. A key's secret appears in one body only, `CreatedKey`, once."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from deployments.billing.pricing import Currency
from serve_app.rendering.times import UtcDatetime


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt setting is refused, not ignored


class KeyCreate(_Request):
    """`POST /v1/admin/keys`."""

    name: str = Field(min_length=1, max_length=200)
    balance: float | None = Field(None, ge=0, description="Money the key may spend in all; absent: unlimited.")
    rate_per_min: float | None = Field(None, ge=0, description="Price of an audio minute; absent: billing's.")
    currency: Currency | None = Field(None, description="Absent: billing.currency.")
    requests_per_second: float | None = Field(None, gt=0, description="Absent: limits.requests_per_second.")
    max_running_jobs: int | None = Field(None, ge=1, description="Absent: jobs.max_running_jobs_per_key.")
    callback_secret: SecretStr | None = Field(
        None, min_length=1, description="Signs the key's job callbacks; never shown again."
    )


class KeyUpdate(_Request):
    """`PATCH /v1/admin/keys/{id}`: only the fields sent change; `null` puts a setting back to the default."""

    name: str | None = Field(None, min_length=1, max_length=200)
    rate_per_min: float | None = Field(None, ge=0)
    currency: Currency | None = None
    requests_per_second: float | None = Field(None, gt=0)
    max_running_jobs: int | None = Field(None, ge=1)
    callback_secret: SecretStr | None = Field(None, min_length=1)


class Credit(_Request):
    """`POST /v1/admin/keys/{id}/credit`."""

    amount: float = Field(gt=0, description="Money added to the balance, in the key's currency.")
    note: str | None = Field(None, max_length=500, description="Kept in the audit trail.")


class KeyBalance(BaseModel):
    initial: float | None = Field(description="The balance the key was given; null: unlimited.")
    remaining: float | None = Field(description="Initial, plus credits, less what it spent; null: unlimited.")
    currency: str


class KeyInfo(BaseModel):
    """A key as the admin API shows it: never its secret."""

    id: str = Field(description="`key_...` for a key of the admin API, `static-<n>` for one from the environment.")
    name: str
    prefix: str | None = Field(description="The key's first characters; null for a static key.")
    static: bool = Field(description="From STT_API_KEYS or the keys file: neither changed nor revoked here.")
    revocable: bool
    created_at: UtcDatetime | None
    updated_at: UtcDatetime | None
    revoked_at: UtcDatetime | None
    balance: KeyBalance
    rate_per_min: float = Field(description="The key's price of an audio minute (its own or billing's).")
    requests_per_second: float | None = Field(description="Its own request rate; null: limits'.")
    max_running_jobs: int | None = Field(description="Its own cap on running jobs; null: jobs'.")
    callback_secret_set: bool


class CreatedKey(KeyInfo):
    """The answer to `POST /v1/admin/keys`: the only time the key is shown."""

    key: str = Field(description="The API key. Store it now: the service keeps only its hash.")


class KeyPage(BaseModel):
    items: list[KeyInfo]
    next_cursor: str | None
    has_more: bool


class CreditResult(BaseModel):
    id: str
    credited: float
    balance: KeyBalance


class AuditItem(BaseModel):
    id: int
    at: UtcDatetime
    actor: str = Field(description="The admin key that made the change, by name and prefix, never the key.")
    action: str = Field(description="`create`, `update`, `credit` or `revoke`.")
    key_id: str
    details: dict[str, Any]


class AuditPage(BaseModel):
    items: list[AuditItem]
    next_cursor: int | None
    has_more: bool
