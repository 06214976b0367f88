"""`GET /v1/transcribe` upgraded to a WebSocket: live transcription in the nexara realtime protocol.

Before the upgrade the key is checked like any request's, and a refusal is an HTTP answer with a JSON
`detail`: 401 (bad key), 402 (balance spent), 429 (request rate, or the key's open sessions). After it,
a bad query is an `error` frame and close 4000. The session itself runs in `serve_app/live/connection.py`.
"""

from fastapi import APIRouter, HTTPException, WebSocket
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from deployments.vocabulary import unknown_dictionary
from serve_app.common.auth import BEARER_SUBPROTOCOL
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.redaction import redaction_options
from serve_app.common.voices import known_voices, split_ids
from serve_app.live.connection import LiveConnection
from serve_app.live.schemas import LiveSessionQuery
from serve_app.sessions.admission import claim_session, deny_upgrade, funded_key
from serve_app.sessions.runner import session_slot

router = APIRouter(tags=["live"])


@router.websocket("/v1/transcribe")
async def transcribe_live(websocket: WebSocket, services: ServicesDependency) -> None:
    try:  # the same checks, in the same order, as every HTTP route's; called here, so a refusal is an answer
        key, funds = await funded_key(websocket, services)
        await claim_session(services, key)
    except HTTPException as refusal:
        return await _refuse(websocket, refusal)
    async with session_slot(services, key):
        offered = websocket.scope.get("subprotocols", [])  # only one the client offered may be chosen
        subprotocol = next((name for name in (BEARER_SUBPROTOCOL, "realtime") if name in offered), None)
        await websocket.accept(subprotocol=subprotocol)  # a browser's socket fails unless its subprotocol is chosen
        try:
            query = LiveSessionQuery.from_query(websocket.query_params)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'query'}: {e['msg']}" for e in error.errors())
            return await LiveConnection.refuse(websocket, "invalid_config", problems)
        if (unknown := unknown_dictionary(query.dictionary, services.config.vocabulary)) is not None:
            return await LiveConnection.refuse(websocket, "invalid_config", f"dictionary: {unknown}")
        try:
            voices = await known_voices(services, key.owner, split_ids(query.voices))
            redaction = redaction_options(query.redact, query.redact_mode, key.owner, None)
        except HTTPException as refusal:
            return await LiveConnection.refuse(websocket, "invalid_config", str(refusal.detail))
        await LiveConnection(websocket, services, key, query, funds, voices, redaction).run()


async def _refuse(websocket: WebSocket, refusal: HTTPException) -> None:
    response = JSONResponse({"detail": refusal.detail}, status_code=refusal.status_code, headers=refusal.headers)
    await deny_upgrade(websocket, refusal, response)
