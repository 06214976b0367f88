"""`GET /v1/realtime` upgraded to a WebSocket: OpenAI realtime transcription sessions (`intent=transcription`),
as the `openai` SDK's realtime client speaks them. The session runs in `serve_app/realtime/connection.py`.

The key comes in `Authorization: Bearer`, or as a browser's subprotocol `openai-insecure-api-key.<key>`. The
checks are the nexara route's, in the same order; a refusal is an OpenAI `error` event after the upgrade (the
SDK shows events, not handshake statuses), then a close: 4001 (bad key), 4402 (balance spent), 1008 (request
rate, or the key's open sessions).
"""

from fastapi import APIRouter, HTTPException, WebSocket, status

from serve_app.common.dependencies import ServicesDependency
from serve_app.realtime._events import error_event
from serve_app.realtime.connection import RealtimeConnection
from serve_app.sessions.admission import claim_session, funded_key
from serve_app.sessions.runner import session_slot

router = APIRouter(tags=["realtime"])

REFUSALS = {
    status.HTTP_401_UNAUTHORIZED: ("invalid_api_key", 4001),
    status.HTTP_402_PAYMENT_REQUIRED: ("insufficient_balance", 4402),
    status.HTTP_429_TOO_MANY_REQUESTS: ("rate_limit_exceeded", 1008),
}
"""A refused key's HTTP status as the `error` event's code and the close code that follows it."""
BROWSER_SUBPROTOCOL = "realtime"
BETA_SUBPROTOCOL = "openai-beta.realtime-v1"


@router.websocket("/v1/realtime")
async def realtime_transcription(websocket: WebSocket, services: ServicesDependency) -> None:
    offered = [value.strip() for value in websocket.headers.get("sec-websocket-protocol", "").split(",")]
    subprotocol = BROWSER_SUBPROTOCOL if BROWSER_SUBPROTOCOL in offered else None
    beta = "realtime=v1" in websocket.headers.get("openai-beta", "") or BETA_SUBPROTOCOL in offered
    await websocket.accept(subprotocol=subprotocol)  # a browser's socket fails unless its subprotocol is chosen
    try:
        key, funds = await funded_key(websocket, services)
    except HTTPException as refusal:
        return await _refuse(websocket, refusal)
    if websocket.query_params.get("intent", "transcription") != "transcription":
        message = "this server holds transcription sessions only: connect with intent=transcription"
        await websocket.send_json(error_event("invalid_intent", message, param="intent"))
        return await websocket.close(code=4000)
    try:
        await claim_session(services, key)
    except HTTPException as refusal:
        return await _refuse(websocket, refusal)
    async with session_slot(services, key):
        await RealtimeConnection(websocket, services, key, funds, beta).run()


async def _refuse(websocket: WebSocket, refusal: HTTPException) -> None:
    code, close_code = REFUSALS.get(refusal.status_code, ("invalid_request", 1008))
    await websocket.send_json(error_event(code, str(refusal.detail)))
    await websocket.close(code=close_code)
