"""API keys and request rate; the 402 of a spent balance. Every API route depends on `require_api_key`
(`serve_app.common.dependencies`, over `authenticate` here), and routes that start work also on `require_funds`.

Keys come from the environment: `STT_API_KEYS` (comma-separated, no balance: unlimited) and/or
`STT_API_KEYS_FILE` (JSON or YAML: a list of keys with a name, a balance and price and optional per-key
limits), read once (static), and from the admin API's key store (deployments/keys/store.py), which each
replica re-reads when its version changes, checked at most every `REFRESH_S`, so a new, changed or revoked
key applies on every replica within about a second without a redeploy. Static keys are compared in
constant time, stored keys by their SHA-256; keys are never logged; usage is stored by SHA-256. What a key pays
and whether it may still spend is billing's (`deployments/billing/pricing.py`); this module only answers
the spent balance with 402.
"""

import asyncio
import hashlib
import hmac
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from fastapi import HTTPException, status
from pydantic import BaseModel, Field, SecretStr, model_validator
from ray.actor import ActorProxy
from starlette.requests import HTTPConnection

from deployments.billing.pricing import Currency, Funds
from deployments.errors import StorageError
from deployments.jobs.records import owner_of
from deployments.keys.store import KeyStore, StoredKey
from serve_app.common.errors import ErrorResponse
from serve_app.common.request_leases import RequestLeases
from serve_app.config import SecretSettings

logger = logging.getLogger("ray.serve")

INVALID_CREDENTIALS = "authentication credentials were not provided or are invalid"
REQUEST_LIMIT_EXCEEDED = "request limit exceeded"

AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "The key is missing or unknown."},
    429: {"model": ErrorResponse, "description": "Over the key's request rate (see Retry-After), or its job cap."},
}
FUNDS_ERROR: dict[int | str, dict[str, Any]] = {
    402: {"model": ErrorResponse, "description": "The key's balance is spent."}
}


class ApiKey(BaseModel):
    """One key of the keys file, or of the key store (which knows only its hash)."""

    key: SecretStr | None = Field(None, min_length=1)
    key_hash: str | None = Field(None, description="SHA-256 hex of the key: the key store's keys have only this.")
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
    stored_id: str | None = Field(None, description="The key store's id (the admin API's); None: a static key.")

    @model_validator(mode="after")
    def one_balance(self) -> "ApiKey":
        if self.balance is not None and self.balance_seconds is not None:
            raise ValueError("give a key either balance (money) or balance_seconds (audio), not both")
        if (self.key is None) == (self.key_hash is None):
            raise ValueError("give a key its `key`")
        return self

    @property
    def owner(self) -> str:
        return self.key_hash or owner_of(self.key.get_secret_value() if self.key else "")

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
    """STT_API_KEYS (unlimited) plus the keys of STT_API_KEYS_FILE: the static keys. Either, or admin keys
    (STT_ADMIN_KEYS, which make keys at run time), is required."""
    keys = [ApiKey(key=key, name="STT_API_KEYS") for key in settings.api_key_list()]
    if settings.api_keys_file:
        keys += load_keys_file(Path(settings.api_keys_file).expanduser())
    if not keys and not settings.admin_key_list():
        raise RuntimeError(
            "no API keys: export STT_API_KEYS (comma-separated), STT_API_KEYS_FILE (a keys file) or STT_ADMIN_KEYS"
            " (admin keys, which make API keys at /v1/admin/keys)"
        )
    return keys


def stored_api_key(stored: StoredKey) -> ApiKey:
    """A key of the key store as authentication and billing see any key."""
    secret = stored.callback_secret
    return ApiKey(
        key_hash=stored.key_hash,
        stored_id=stored.key_id,
        name=stored.name,
        balance=stored.balance,
        rate_per_min=stored.rate_per_min,
        currency=stored.currency,
        requests_per_second=stored.requests_per_second,
        max_running_jobs=stored.max_running_jobs,
        callback_secret=SecretStr(secret) if secret is not None else None,
    )


REFRESH_S = 1.0
"""How stale a replica's view of the key store may be: a changed or revoked key applies within this (plus the
query)."""


class ApiKeys:
    """The valid keys: the static ones (compared in constant time so timing reveals nothing about a key) and,
    with a `store`, the key store's, by hash, re-read when the store's version has changed, checked at most
    every `refresh_s`."""

    def __init__(
        self,
        keys: Sequence[ApiKey],
        store: KeyStore | None = None,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.static = list(keys)
        self._keys = [(key.key.get_secret_value().encode(), key) for key in keys if key.key is not None]
        self._static_by_owner = {key.owner: key for key in keys}
        self.store, self.refresh_s, self.clock = store, refresh_s, clock
        self._stored: dict[str, ApiKey] = {}
        self._version: int | None = None
        self._checked_at = -math.inf
        self._refreshing = asyncio.Lock()

    def lookup(self, candidate: str) -> ApiKey | None:
        """The key `candidate` is, in this replica's current view (see `find`)."""
        given = candidate.encode()
        found = None
        for secret, key in self._keys:  # no early exit, on purpose
            if hmac.compare_digest(given, secret):
                found = key
        return found or self._stored.get(hashlib.sha256(given).hexdigest())

    def by_owner(self, owner: str) -> ApiKey | None:
        """The key whose SHA-256 is `owner`, in this replica's current view (a job's callback is signed with its
        key's secret)."""
        return self._static_by_owner.get(owner) or self._stored.get(owner)

    async def find(self, candidate: str) -> ApiKey | None:
        """`lookup` after bringing the key store's keys up to date, if they may be stale."""
        await self.refresh()
        return self.lookup(candidate)

    def expire(self) -> None:
        """Re-read the key store at the next request: this replica just changed it."""
        self._checked_at = -math.inf

    async def refresh(self) -> None:
        """Re-read the key store's keys if its version changed; at most once per `refresh_s`. A store that
        cannot be read keeps the last view (logged) and is asked again at the next request."""
        if self.store is None or self.clock() - self._checked_at < self.refresh_s:
            return
        async with self._refreshing:
            if self.clock() - self._checked_at < self.refresh_s:
                return  # another request refreshed it meanwhile
            started = self.clock()
            try:
                await asyncio.to_thread(self._reload)
            except StorageError as error:
                logger.warning("the key store could not be read; its keys as last read apply: %s", error)
                return
            self._checked_at = started

    def _reload(self) -> None:
        assert self.store is not None
        if self.store.version() == self._version:
            return
        version, active = self.store.active()
        self._stored = {stored.key_hash: stored_api_key(stored) for stored in active}
        self._version = version


async def authenticate(
    connection: HTTPConnection,
    api_keys: ApiKeys,
    rate_limiter: ActorProxy[Any],
    default_rate: float,
    leases: RequestLeases,
) -> ApiKey:
    """The caller's key, or 401; then one request off its rate (the key's own, else `default_rate`), or 429
    with Retry-After."""
    secret = presented_key(connection)
    key = await api_keys.find(secret) if secret is not None else None
    if key is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, detail=INVALID_CREDENTIALS, headers={"WWW-Authenticate": "Bearer"}
        )
    await take_request(key, rate_limiter, default_rate, leases)
    return key


async def take_request(key: ApiKey, rate_limiter: ActorProxy[Any], default_rate: float, leases: RequestLeases) -> None:
    """One request off `key`'s rate (its own, else `default_rate`), or 429 with Retry-After, through the
    replica's `leases` of the rate (a lot of tokens per actor call: `request_leases.py`)."""
    wait_s = await leases.take(rate_limiter, key.owner, key.requests_per_second or default_rate)
    if wait_s > 0:
        retry_after = str(max(1, math.ceil(wait_s)))
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, REQUEST_LIMIT_EXCEEDED, {"Retry-After": retry_after})


class AdminKeys:
    """The admin keys (`STT_ADMIN_KEYS`): they manage keys and do nothing else. Compared in constant time; an
    admin is named in the audit trail by `actor`, never by its key."""

    def __init__(self, keys: Sequence[str]) -> None:
        self._keys = [key.encode() for key in keys if key]

    def actor(self, candidate: str) -> str | None:
        """The audit trail's name of the admin key `candidate` is; None when it is none."""
        given = candidate.encode()
        found = None
        for index, secret in enumerate(self._keys):  # no early exit, on purpose
            if hmac.compare_digest(given, secret):
                found = index
        if found is None:
            return None
        return f"admin #{found + 1} ({admin_prefix(candidate)})"


def admin_prefix(key: str) -> str:
    """What tells admin keys apart: a long key's first characters, else part of its hash (a short key's
    characters would give too much of it away)."""
    return key[:7] + "..." if len(key) >= 24 else "sha256:" + owner_of(key)[:8]


AUTHORIZATION_SCHEMES = ("bearer", "token")
"""`Authorization: Bearer <key>` (OpenAI, nexara) or `Token <key>` (Deepgram); a header of one word is the key
itself (AssemblyAI sends `Authorization: <key>`)."""


def presented_key(connection: HTTPConnection) -> str | None:
    """The key the caller presents, in any client's way: the Authorization header (`AUTHORIZATION_SCHEMES`),
    else, on a WebSocket, a subprotocol (`subprotocol_key`)."""
    header = connection.headers.get("authorization", "").strip()
    scheme, _, rest = header.partition(" ")
    if rest.strip() and scheme.lower() in AUTHORIZATION_SCHEMES:
        return rest.strip()
    if header and not rest:
        return header
    return subprotocol_key(connection)


BEARER_SUBPROTOCOL = "bearer"
TOKEN_SUBPROTOCOL = "token"
"""Deepgram's browser clients offer `["token", key]`, as ours offer `["bearer", key]`."""


OPENAI_KEY_SUBPROTOCOL = "openai-insecure-api-key."
"""OpenAI's browser clients offer `["realtime", "openai-insecure-api-key.<key>", ...]`; the server accepts
`realtime`."""


def subprotocol_key(connection: HTTPConnection) -> str | None:
    """A browser's WebSocket cannot send an Authorization header: it offers the key as its second
    subprotocol instead, `new WebSocket(url, ["bearer", key])` (Deepgram's: `["token", key]`), and the server
    accepts the first; or, as
    OpenAI's realtime clients do, as `openai-insecure-api-key.<key>`."""
    if connection.scope["type"] != "websocket":
        return None
    offered = [value.strip() for value in connection.headers.get("sec-websocket-protocol", "").split(",")]
    if len(offered) == 2 and offered[0] in (BEARER_SUBPROTOCOL, TOKEN_SUBPROTOCOL) and offered[1]:
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
