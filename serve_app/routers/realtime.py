"""`GET /v1/transcribe` upgraded to a WebSocket: live transcription in the nexara realtime protocol.

Before the upgrade the key is checked like any request's, and a refusal is an HTTP answer with a JSON
`detail`: 401 (bad key), 402 (balance spent), 429 (request rate, or the key's open sessions). After it,
a bad query is an `error` frame and close 4000. The session itself runs in `serve_app/live.py`.
"""

from fastapi import APIRouter, WebSocket, status
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from serve_app.auth import INVALID_CREDENTIALS, REQUEST_LIMIT_EXCEEDED, ApiKey, Price
from serve_app.live import LiveConnection, SessionAllowance
from serve_app.schemas import RealtimeQuery

router = APIRouter(tags=["realtime"])


@router.websocket("/v1/transcribe")
async def transcribe_live(websocket: WebSocket) -> None:
    state = websocket.app.state
    key = _caller(websocket)
    if key is None:
        return await _refuse(websocket, status.HTTP_401_UNAUTHORIZED, INVALID_CREDENTIALS)
    rate = key.requests_per_second or state.config.limits.requests_per_second
    if await state.rate_limiter.acquire.remote(key.owner, rate) > 0:
        return await _refuse(websocket, status.HTTP_429_TOO_MANY_REQUESTS, REQUEST_LIMIT_EXCEEDED)
    price = Price.of(key, state.config.billing)
    allowance = SessionAllowance(price=price)
    if price.balance is not None:
        allowance.money = price.balance - await state.ledger.spent.remote(key.owner, price.rate_per_min)
        if allowance.money <= 0:
            detail = f"insufficient funds: this key's balance of {price.balance:.4g} {price.currency} is spent"
            return await _refuse(websocket, status.HTTP_402_PAYMENT_REQUIRED, detail)
    limit = state.config.realtime.max_sessions_per_key
    if not await state.rate_limiter.open_session.remote(key.owner, limit):
        detail = f"this key already has {limit} live sessions open: close one first"
        return await _refuse(websocket, status.HTTP_429_TOO_MANY_REQUESTS, detail)
    try:
        await websocket.accept()
        try:
            query = RealtimeQuery.model_validate(dict(websocket.query_params))
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'query'}: {e['msg']}" for e in error.errors())
            return await LiveConnection.refuse(websocket, "invalid_config", problems)
        await LiveConnection(websocket, state, key, query, allowance).run()
    finally:
        await state.rate_limiter.close_session.remote(key.owner)


def _caller(websocket: WebSocket) -> ApiKey | None:
    scheme, _, token = websocket.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return websocket.app.state.api_keys.lookup(token.strip())


async def _refuse(websocket: WebSocket, status_code: int, detail: str) -> None:
    """An HTTP answer instead of the upgrade, where the server can send one (ASGI's WebSocket denial
    response); else the handshake is refused, which clients see as 403."""
    response = JSONResponse({"detail": detail}, status_code=status_code)
    if status_code == status.HTTP_429_TOO_MANY_REQUESTS:
        response.headers["Retry-After"] = "1"
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=detail[:120])
