"""API keys, request rate and funds: every API route depends on `require_api_key`, and routes that start
work also on `require_funds`.

Keys come from the environment: `STT_API_KEYS` (comma-separated, no balance: unlimited) and/or
`STT_API_KEYS_FILE` (JSON or YAML: a list of keys with a name, a balance and price and optional per-key
limits). Keys are compared in constant time and never logged; usage is stored by SHA-256.

Balances are money: `balance` in the key's `currency`, spent at `rate_per_min` per audio minute (both
default to `billing` in the app config). A key written with `balance_seconds` (earlier versions) keeps
working: that many audio seconds at the key's rate.
"""

import hmac
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import yaml
from fastapi import Depends, HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, SecretStr, model_validator
from starlette.requests import HTTPConnection

from deployments.jobs.records import owner_of
from serve_app.config import BillingConfig, Currency, SecretSettings
from serve_app.schemas import ErrorResponse

INVALID_CREDENTIALS = "authentication credentials were not provided or are invalid"
REQUEST_LIMIT_EXCEEDED = "request limit exceeded"

AUTH_ERRORS: dict[int | str, dict] = {
    401: {"model": ErrorResponse, "description": "The key is missing or unknown."},
    429: {"model": ErrorResponse, "description": "Over the key's request rate (see Retry-After), or its job cap."},
}
FUNDS_ERROR: dict[int | str, dict] = {402: {"model": ErrorResponse, "description": "The key's balance is spent."}}

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


class Price(BaseModel):
    """A key's price and balance, with the app's defaults filled in."""

    rate_per_min: float
    currency: Currency
    balance: float | None = Field(description="Money the key may spend in all; None: unlimited.")

    @classmethod
    def of(cls, key: ApiKey, defaults: BillingConfig) -> "Price":
        rate = key.rate_per_min if key.rate_per_min is not None else defaults.rate_per_min
        balance = key.balance
        if key.balance_seconds is not None and rate > 0:  # at no price, audio seconds cost nothing
            balance = key.balance_seconds / 60 * rate
        return cls(rate_per_min=rate, currency=key.currency or defaults.currency, balance=balance)


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

    def lookup(self, candidate: str) -> ApiKey | None:
        given = candidate.encode()
        found = None
        for secret, key in self._keys:  # no early exit, on purpose
            if hmac.compare_digest(given, secret):
                found = key
        return found


async def require_api_key(request: HTTPConnection) -> ApiKey:
    """The caller's key, or 401; then one request off its rate, or 429 with Retry-After. Also called by the
    WebSocket route before the upgrade, with the WebSocket as the connection."""
    credentials: HTTPAuthorizationCredentials | None = await _bearer(request)
    api_keys: ApiKeys = request.app.state.api_keys
    secret = credentials.credentials if credentials is not None else subprotocol_key(request)
    key = api_keys.lookup(secret) if secret is not None else None
    if key is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, detail=INVALID_CREDENTIALS, headers={"WWW-Authenticate": "Bearer"}
        )
    rate = key.requests_per_second or request.app.state.config.limits.requests_per_second
    wait_s = await request.app.state.rate_limiter.acquire.remote(key.owner, rate)
    if wait_s > 0:
        retry_after = str(max(1, math.ceil(wait_s)))
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, REQUEST_LIMIT_EXCEEDED, {"Retry-After": retry_after})
    return key


BEARER_SUBPROTOCOL = "bearer"


def subprotocol_key(connection: HTTPConnection) -> str | None:
    """A browser's WebSocket cannot send an Authorization header: it offers the key as its second
    subprotocol instead, `new WebSocket(url, ["bearer", key])`, and the server accepts `bearer`."""
    if connection.scope["type"] != "websocket":
        return None
    offered = [value.strip() for value in connection.headers.get("sec-websocket-protocol", "").split(",")]
    if len(offered) == 2 and offered[0] == BEARER_SUBPROTOCOL and offered[1]:
        return offered[1]
    return None


def price_of(request: HTTPConnection, key: ApiKey) -> Price:
    return Price.of(key, request.app.state.config.billing)


@dataclass(frozen=True)
class Funds:
    """A key's price and what it has spent so far, from the ledger."""

    price: Price
    spent: float

    @property
    def left(self) -> float | None:
        """Money left on the balance; None: unlimited."""
        return None if self.price.balance is None else self.price.balance - self.spent

    def raise_if_exhausted(self) -> None:
        """402 when the balance is spent."""
        if self.left is not None and self.left <= 0:
            price = self.price
            raise HTTPException(
                status.HTTP_402_PAYMENT_REQUIRED,
                f"insufficient funds: this key's balance of {price.balance:.4g} {price.currency} is spent"
                f" ({self.spent:.4g} {price.currency} used); top it up to continue",
            )

    def audio_s(self, channels: int) -> float:
        """Seconds of audio per channel the money left pays for, with `channels` transcribed."""
        if self.left is None or self.price.rate_per_min <= 0:
            return math.inf
        return self.left / self.price.rate_per_min * 60 / channels


async def funds_of(request: HTTPConnection, key: ApiKey) -> Funds:
    price = price_of(request, key)
    if price.balance is None:
        return Funds(price=price, spent=0.0)
    return Funds(price=price, spent=await request.app.state.ledger.spent.remote(key.owner, price.rate_per_min))


async def require_funds(request: HTTPConnection, key: Annotated[ApiKey, Depends(require_api_key)]) -> ApiKey:
    """402 when the key's balance is spent. Completed work is charged by audio duration, once, so the last
    request may take a balance below zero."""
    (await funds_of(request, key)).raise_if_exhausted()
    return key
