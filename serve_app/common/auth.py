"""API keys and request rate; the 402 of a spent balance. Every API route depends on `require_api_key`
(`serve_app.common.dependencies`, over `authenticate` here), and routes that start work also on `require_funds`.

Keys come from the environment: `STT_API_KEYS` (comma-separated, no balance: unlimited) and/or
`STT_API_KEYS_FILE` (JSON or YAML: a list of keys with a name, a balance and price and optional per-key
limits). Keys are compared in constant time and never logged; usage is stored by SHA-256. What a key pays
and whether it may still spend is billing's (`deployments/billing/pricing.py`); this module only answers
the spent balance with 402.
"""

import hmac
import json
import math
from pathlib import Path
from typing import Any

import yaml
from fastapi import HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, SecretStr, model_validator
from ray.actor import ActorProxy
from starlette.requests import HTTPConnection

from deployments.billing.pricing import Currency, Funds
from deployments.jobs.records import owner_of
from serve_app.common.errors import ErrorResponse
from serve_app.config import SecretSettings

INVALID_CREDENTIALS = "authentication credentials were not provided or are invalid"
REQUEST_LIMIT_EXCEEDED = "request limit exceeded"

AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "The key is missing or unknown."},
    429: {"model": ErrorResponse, "description": "Over the key's request rate (see Retry-After), or its job cap."},
}
FUNDS_ERROR: dict[int | str, dict[str, Any]] = {
    402: {"model": ErrorResponse, "description": "The key's balance is spent."}
}

_bearer = HTTPBearer(auto_error=False, description="An API key from STT_API_KEYS or STT_API_KEYS_FILE.")


class ApiKey(BaseModel):
    """One key of the keys file."""

    key: SecretStr = Field(min_length=1)
    id: int | None = Field(None, ge=0, description="Shown in usage statements; derived from the key when absent.")
    name: str = ""
    balance: float | None = Field(None, description="Money this key may spend in all; absent: unlimited.")
    balance_seconds: float | None = Field(
        None, ge=0, description="Earlier versions' balance: audio seconds, at the key's rate. Not with `balance`."
    )
    rate_per_min: float | None = Field(None, ge=0, description="Price of an audio minute; overrides billing.")
    currency: Currency | None = Field(None, description="Overrides billing.currency.")
    requests_per_second: float | None = Field(None, gt=0, description="Overrides limits.requests_per_second.")
    max_running_jobs: int | None = Field(None, ge=1, description="Overrides jobs.max_running_jobs_per_key.")
    callback_secret: SecretStr | None = None

    @model_validator(mode="after")
    def one_balance(self) -> "ApiKey":
        if self.balance is not None and self.balance_seconds is not None:
            raise ValueError("give a key either balance (money) or balance_seconds (audio), not both")
        return self

    @property
    def owner(self) -> str:
        return owner_of(self.key.get_secret_value())

    @property
    def key_id(self) -> int:
        return self.id if self.id is not None else int(self.owner[:8], 16)

    @property
    def display_name(self) -> str:
        return self.name or f"Key #{self.key_id}"


class KeysFile(BaseModel):
    keys: list[ApiKey]


def load_keys_file(path: Path) -> list[ApiKey]:
    """A JSON or YAML file: `{"keys": [...]}` or the list itself."""
    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return KeysFile.model_validate({"keys": data} if isinstance(data, list) else data).keys


def configured_keys(settings: SecretSettings) -> list[ApiKey]:
    """STT_API_KEYS (unlimited) plus the keys of STT_API_KEYS_FILE; at least one is required."""
    keys = [ApiKey(key=key, name="STT_API_KEYS") for key in settings.api_key_list()]
    if settings.api_keys_file:
        keys += load_keys_file(Path(settings.api_keys_file).expanduser())
    if not keys:
        raise RuntimeError("no API keys: export STT_API_KEYS (comma-separated) or STT_API_KEYS_FILE (a keys file)")
    return keys


class ApiKeys:
    """The valid keys, compared in constant time so timing reveals nothing about a key."""

    def __init__(self, keys: list[ApiKey]) -> None:
        self._keys = [(key.key.get_secret_value().encode(), key) for key in keys]
        self._by_owner = {key.owner: key for key in keys}

    def by_owner(self, owner: str) -> ApiKey | None:
        """The key whose SHA-256 is `owner` (a job's callback is signed with its key's secret)."""
        return self._by_owner.get(owner)

    def lookup(self, candidate: str) -> ApiKey | None:
        given = candidate.encode()
        found = None
        for secret, key in self._keys:  # no early exit, on purpose
            if hmac.compare_digest(given, secret):
                found = key
        return found


async def authenticate(
    connection: HTTPConnection, api_keys: ApiKeys, rate_limiter: ActorProxy[Any], default_rate: float
) -> ApiKey:
    """The caller's key, or 401; then one request off its rate (the key's own, else `default_rate`), or 429
    with Retry-After."""
    credentials: HTTPAuthorizationCredentials | None = await _bearer(connection)
    secret = credentials.credentials if credentials is not None else subprotocol_key(connection)
    key = api_keys.lookup(secret) if secret is not None else None
    if key is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, detail=INVALID_CREDENTIALS, headers={"WWW-Authenticate": "Bearer"}
        )
    wait_s = await rate_limiter.acquire.remote(key.owner, key.requests_per_second or default_rate)
    if wait_s > 0:
        retry_after = str(max(1, math.ceil(wait_s)))
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, REQUEST_LIMIT_EXCEEDED, {"Retry-After": retry_after})
    return key


BEARER_SUBPROTOCOL = "bearer"


OPENAI_KEY_SUBPROTOCOL = "openai-insecure-api-key."
"""OpenAI's browser clients offer `["realtime", "openai-insecure-api-key.<key>", ...]`; the server accepts
`realtime`."""


def subprotocol_key(connection: HTTPConnection) -> str | None:
    """A browser's WebSocket cannot send an Authorization header: it offers the key as its second
    subprotocol instead, `new WebSocket(url, ["bearer", key])`, and the server accepts `bearer`; or, as
    OpenAI's realtime clients do, as `openai-insecure-api-key.<key>`."""
    if connection.scope["type"] != "websocket":
        return None
    offered = [value.strip() for value in connection.headers.get("sec-websocket-protocol", "").split(",")]
    if len(offered) == 2 and offered[0] == BEARER_SUBPROTOCOL and offered[1]:
        return offered[1]
    for value in offered:
        if value.startswith(OPENAI_KEY_SUBPROTOCOL) and len(value) > len(OPENAI_KEY_SUBPROTOCOL):
            return value.removeprefix(OPENAI_KEY_SUBPROTOCOL)
    return None


def raise_if_exhausted(funds: Funds) -> None:
    """402 when the balance is spent."""
    if funds.exhausted:
        price = funds.price
        raise HTTPException(
            status.HTTP_402_PAYMENT_REQUIRED,
            f"insufficient funds: this key's balance of {price.balance:.4g} {price.currency} is spent"
            f" ({funds.spent:.4g} {price.currency} used); top it up to continue",
        )
