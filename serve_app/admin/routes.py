"""`/v1/admin/keys` and `/v1/admin/audit`: API keys managed while the service runs.

Only admin keys (`STT_ADMIN_KEYS`) pass: no key or an unknown one is 401, an API key 403. Keys made here live
in the key store (deployments/keys/store.py), which every ingress replica re-reads within about a second of a
change (`serve_app.common.auth.ApiKeys`); this replica at once. Keys from `STT_API_KEYS` and the keys file are
listed as static and cannot be changed here (409). The store's calls block: they run in the thread pool.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Response, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from deployments.billing.pricing import Price
from deployments.keys.store import AuditEntry, KeyStore, RevokedKeyError, Spending, StoredKey
from serve_app.admin.schemas import (
    AuditItem,
    AuditPage,
    CreatedKey,
    Credit,
    CreditResult,
    KeyBalance,
    KeyCreate,
    KeyInfo,
    KeyPage,
    KeyUpdate,
)
from serve_app.common.auth import INVALID_CREDENTIALS, ApiKey, stored_api_key
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.errors import ErrorResponse
from serve_app.common.services import Services

T = TypeVar("T")

STATIC_PREFIX = "static-"
STATIC_REFUSAL = (
    "key {id} comes from the environment (STT_API_KEYS) or the keys file (STT_API_KEYS_FILE): change or remove"
    " it there and redeploy"
)
API_KEY_IS_NOT_ADMIN = "an API key cannot manage keys: use an admin key (STT_ADMIN_KEYS)"

_bearer = HTTPBearer(auto_error=False, description="An admin key from STT_ADMIN_KEYS.")


async def require_admin(connection: HTTPConnection, services: ServicesDependency) -> str:
    """The calling admin as the audit trail names it; 401 without an admin key, 403 with an API key."""
    credentials: HTTPAuthorizationCredentials | None = await _bearer(connection)
    secret = credentials.credentials if credentials is not None else ""
    actor = services.admin_keys.actor(secret) if secret else None
    if actor is not None:
        return actor
    if secret and await services.api_keys.find(secret) is not None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, API_KEY_IS_NOT_ADMIN)
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, INVALID_CREDENTIALS, {"WWW-Authenticate": "Bearer"})


Admin = Annotated[str, Depends(require_admin)]


def get_store(services: ServicesDependency) -> KeyStore:
    if services.key_store is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "this service keeps no key store")
    return services.key_store


Store = Annotated[KeyStore, Depends(get_store)]

ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "No admin key, or an unknown one."},
    403: {"model": ErrorResponse, "description": "An API key: only admin keys manage keys."},
}
KEY_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorResponse, "description": "No key has this id."},
    409: {"model": ErrorResponse, "description": "A static key (environment, keys file) or a revoked one."},
}

router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(require_admin)], responses=ADMIN_ERRORS)


async def _blocking(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await run_in_threadpool(call, *args, **kwargs)


@router.post("/keys", status_code=status.HTTP_201_CREATED, response_model=CreatedKey)
async def create_key(body: KeyCreate, actor: Admin, store: Store, services: ServicesDependency) -> CreatedKey:
    """A new key, shown once in this answer."""
    settings = body.model_dump(exclude={"name", "callback_secret"})
    secret = body.callback_secret.get_secret_value() if body.callback_secret else None
    made = await _blocking(store.create, actor, body.name, callback_secret=secret, **settings)
    services.api_keys.expire()
    info = _stored_info(made.stored, services, Spending())
    return CreatedKey(**info.model_dump(), key=made.key)


@router.get("/keys", response_model=KeyPage)
async def list_keys(
    store: Store,
    services: ServicesDependency,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 50,
    cursor: Annotated[str | None, Query(description="The previous page's next_cursor.")] = None,
) -> KeyPage:
    """Static keys first, then the key store's, oldest first (revoked ones too)."""
    static = services.api_keys.static
    skip, after = _cursor(cursor, len(static))
    statics = static[skip : skip + limit + 1]
    stored: list[StoredKey] = []
    if len(statics) <= limit:
        stored = await _blocking(store.page, after, limit + 1 - len(statics))
    owners = [key.owner for key in statics] + [key.key_hash for key in stored]
    spending = await _blocking(store.spending, owners)
    items = [_static_info(key, services, spending[key.owner]) for key in statics]
    items += [_stored_info(key, services, spending[key.key_hash]) for key in stored]
    has_more = len(items) > limit
    next_cursor = None
    if has_more:
        last = limit - 1
        next_cursor = f"s{skip + last + 1}" if last < len(statics) else f"d{stored[last - len(statics)].seq}"
    return KeyPage(items=items[:limit], next_cursor=next_cursor, has_more=has_more)


@router.get("/keys/{key_id}", response_model=KeyInfo, responses=KEY_ERRORS)
async def get_key(key_id: str, store: Store, services: ServicesDependency) -> KeyInfo:
    static = _static_key(key_id, services)
    if static is not None:
        return _static_info(static, services, (await _blocking(store.spending, [static.owner]))[static.owner])
    stored = await _blocking(store.get, key_id)
    if stored is None:
        raise _unknown(key_id)
    return _stored_info(stored, services, (await _blocking(store.spending, [stored.key_hash]))[stored.key_hash])


@router.patch("/keys/{key_id}", response_model=KeyInfo, responses=KEY_ERRORS)
async def update_key(key_id: str, body: KeyUpdate, actor: Admin, store: Store, services: ServicesDependency) -> KeyInfo:
    """Its name, price and limits; only the fields sent change."""
    _refuse_static(key_id, services)
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "nothing to change: send at least one field")
    if changes.get("name", "") is None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "name cannot be null")
    if body.callback_secret is not None:
        changes["callback_secret"] = body.callback_secret.get_secret_value()
    try:
        stored = await _blocking(store.update, actor, key_id, changes)
    except RevokedKeyError as error:
        raise HTTPException(status.HTTP_409_CONFLICT, f"{error}: it cannot be changed") from None
    if stored is None:
        raise _unknown(key_id)
    services.api_keys.expire()
    return _stored_info(stored, services, (await _blocking(store.spending, [stored.key_hash]))[stored.key_hash])


@router.post("/keys/{key_id}/credit", response_model=CreditResult, responses=KEY_ERRORS)
async def credit_key(
    key_id: str, body: Credit, actor: Admin, store: Store, services: ServicesDependency
) -> CreditResult:
    """Top the balance up: a ledger entry (`task: "credit"`, a negative cost) that usage statements show."""
    _refuse_static(key_id, services)
    current = await _blocking(store.get, key_id)
    if current is None:
        raise _unknown(key_id)
    if current.balance is None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"key {key_id} is unlimited: it has no balance to top up")
    try:
        stored = await _blocking(store.credit, actor, key_id, body.amount, body.note)
    except RevokedKeyError as error:
        raise HTTPException(status.HTTP_409_CONFLICT, f"{error}: it cannot be topped up") from None
    if stored is None:
        raise _unknown(key_id)
    spending = (await _blocking(store.spending, [stored.key_hash]))[stored.key_hash]
    info = _stored_info(stored, services, spending)
    return CreditResult(id=key_id, credited=body.amount, balance=info.balance)


@router.delete("/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT, responses=KEY_ERRORS)
async def revoke_key(key_id: str, actor: Admin, store: Store, services: ServicesDependency) -> Response:
    """Revoke the key: within about a second no replica accepts it. Revoking it again changes nothing."""
    _refuse_static(key_id, services)
    if await _blocking(store.revoke, actor, key_id) is None:
        raise _unknown(key_id)
    services.api_keys.expire()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/audit", response_model=AuditPage)
async def audit(
    store: Store,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 50,
    cursor: Annotated[int | None, Query(ge=1, description="The previous page's next_cursor.")] = None,
    key_id: Annotated[str | None, Query(description="Only this key's changes.")] = None,
) -> AuditPage:
    """Every change made here, newest first: who, when, what, to which key."""
    entries: list[AuditEntry] = await _blocking(store.audit_page, cursor, limit + 1, key_id)
    has_more = len(entries) > limit
    entries = entries[:limit]
    items = [
        AuditItem(id=entry.entry_id, at=_time(entry.at), actor=entry.actor, action=entry.action,
                  key_id=entry.key_id, details=entry.details)
        for entry in entries
    ]  # fmt: skip
    return AuditPage(items=items, next_cursor=entries[-1].entry_id if has_more else None, has_more=has_more)


def _cursor(cursor: str | None, statics: int) -> tuple[int, int | None]:
    """How many static keys to skip, and the key store's `seq` to list after."""
    if cursor is None:
        return 0, None
    try:
        kind, number = cursor[0], int(cursor[1:])
    except (IndexError, ValueError):
        kind, number = "", -1
    if kind not in ("s", "d") or number < 0:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "cursor: not a next_cursor of this list")
    return (number, None) if kind == "s" else (statics, number)


def _static_key(key_id: str, services: Services) -> ApiKey | None:
    if not key_id.startswith(STATIC_PREFIX):
        return None
    for key in services.api_keys.static:
        if f"{STATIC_PREFIX}{key.key_id}" == key_id:
            return key
    return None


def _refuse_static(key_id: str, services: Services) -> None:
    if _static_key(key_id, services) is not None:
        raise HTTPException(status.HTTP_409_CONFLICT, STATIC_REFUSAL.format(id=key_id))


def _unknown(key_id: str) -> HTTPException:
    return HTTPException(status.HTTP_404_NOT_FOUND, f"no key has the id {key_id}")


def _balance(key: ApiKey, services: Services, spending: Spending) -> tuple[Price, KeyBalance]:
    price = Price.of(key, services.config.billing)
    remaining = None if price.balance is None else round(price.balance - spending.spent(price.rate_per_min), 6)
    return price, KeyBalance(initial=price.balance, remaining=remaining, currency=price.currency)


def _static_info(key: ApiKey, services: Services, spending: Spending) -> KeyInfo:
    price, balance = _balance(key, services, spending)
    return KeyInfo(
        id=f"{STATIC_PREFIX}{key.key_id}", name=key.display_name, prefix=None, static=True, revocable=False,
        created_at=None, updated_at=None, revoked_at=None, balance=balance, rate_per_min=price.rate_per_min,
        requests_per_second=key.requests_per_second, max_running_jobs=key.max_running_jobs,
        callback_secret_set=key.callback_secret is not None,
    )  # fmt: skip


def _stored_info(stored: StoredKey, services: Services, spending: Spending) -> KeyInfo:
    price, balance = _balance(stored_api_key(stored), services, spending)
    return KeyInfo(
        id=stored.key_id, name=stored.name, prefix=stored.prefix, static=False, revocable=not stored.revoked,
        created_at=_time(stored.created_at), updated_at=_time(stored.updated_at),
        revoked_at=None if stored.revoked_at is None else _time(stored.revoked_at), balance=balance,
        rate_per_min=price.rate_per_min, requests_per_second=stored.requests_per_second,
        max_running_jobs=stored.max_running_jobs, callback_secret_set=stored.callback_secret is not None,
    )  # fmt: skip


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
