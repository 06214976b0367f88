"""Who may open a live session, checked before the upgrade by every live protocol's route: the checks every
HTTP route makes, in the same order (the key, its request rate, its money), then a place among the key's open
sessions. A refusal is the HTTPException an HTTP route would raise; each protocol answers it in its own way."""

from fastapi import HTTPException, WebSocket, status
from fastapi.responses import JSONResponse

from deployments.billing import pricing
from deployments.billing.pricing import Funds
from serve_app.common.auth import ApiKey, raise_if_exhausted
from serve_app.common.dependencies import price_of, require_api_key
from serve_app.common.services import Services


async def funded_key(websocket: WebSocket, services: Services) -> tuple[ApiKey, Funds]:
    """The caller's key and its money; 401, 429 or 402."""
    key = await require_api_key(websocket, services)
    funds = await pricing.funds(services.ledger, key.owner, price_of(key, services.config))
    raise_if_exhausted(funds)
    return key, funds


async def claim_session(services: Services, key: ApiKey) -> None:
    """One of the key's open sessions, or 429; the route gives it back (`rate_limiter.close_session`) at the end."""
    limit = services.config.live.max_sessions_per_key
    if not await services.rate_limiter.open_session.remote(key.owner, limit):
        detail = f"this key already has {limit} live sessions open: close one first"
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, detail, {"Retry-After": "1"})


async def deny_upgrade(websocket: WebSocket, refusal: HTTPException, answer: JSONResponse) -> None:
    """`answer` (the refusal in the protocol's error shape) instead of the upgrade, where the server can send
    one (ASGI's WebSocket denial response); else the handshake is refused, which clients see as 403."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(answer)
    else:
        await websocket.close(code=1008, reason=str(refusal.detail)[:120])
