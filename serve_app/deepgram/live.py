"""`wss /v1/listen`: Deepgram's live transcription, over the same LiveTranscriber as the nexara and OpenAI
sessions (`serve_app.sessions`: binary frames paid for by the byte and forwarded in order, events relayed
back, the session charged once at its end), written as Deepgram's messages (`_live_events`).

The key comes as `Authorization: Token <key>` (or Bearer), or as the subprotocols `token, <key>`. Before the
upgrade the key and the parameters are checked, and a refusal is an HTTP answer in Deepgram's error shape (the
SDK raises `ApiError` with its status: 401 bad key, 402 balance spent, 429 rate or open sessions, 400 a
parameter). Control messages: `KeepAlive`, `Finalize` (everything sent so far is made final and answered with
`from_finalize`), `CloseStream` (the rest is transcribed, `Metadata` sent, the socket closed)."""

import asyncio
import json
from typing import Any, cast

from fastapi import APIRouter, HTTPException, WebSocket
from fastapi.responses import JSONResponse
from ray.serve.handle import DeploymentResponseGenerator

from deployments.billing.pricing import Funds
from deployments.live.events import BYTES_PER_SAMPLE, SessionFailed
from serve_app.common.auth import TOKEN_SUBPROTOCOL, ApiKey
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.services import Services
from serve_app.deepgram._live_events import DeepgramEvents
from serve_app.deepgram._live_params import LiveOptions, live_options
from serve_app.deepgram.errors import error_body
from serve_app.sessions.admission import claim_session, funded_key
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.relay import relay_events
from serve_app.sessions.socket import ClientSocket
from serve_app.sessions.usage import SessionMeter, charge_session

router = APIRouter(tags=["deepgram"])
TICK_S = 0.1
"""How often the edge looks whether an `UtteranceEnd` is due."""
CLIENT_FAULTS = {"invalid_config", "invalid_audio", "invalid_message", "insufficient_balance", "unauthorized"}


@router.websocket("/v1/listen")
async def listen_live(websocket: WebSocket, services: ServicesDependency) -> None:
    try:  # the checks every HTTP route makes, in the same order; a refusal is an HTTP answer
        key, funds = await funded_key(websocket, services)
        options = live_options(websocket.query_params.multi_items(), services.config.deepgram.models)
        await claim_session(services, key)
    except HTTPException as refusal:
        return await _refuse(websocket, refusal)
    try:
        offered = websocket.scope.get("subprotocols", [])
        await websocket.accept(subprotocol=TOKEN_SUBPROTOCOL if TOKEN_SUBPROTOCOL in offered else None)
        await DeepgramConnection(websocket, services, key, options, funds).run()
    finally:
        await services.rate_limiter.close_session.remote(key.owner)


async def _refuse(websocket: WebSocket, refusal: HTTPException) -> None:
    """An HTTP answer in Deepgram's shape instead of the upgrade, where the server can send one."""
    body = error_body(refusal.status_code, str(refusal.detail))
    response = JSONResponse(body, status_code=refusal.status_code, headers={"dg-error": body["err_msg"][:200]})
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=str(refusal.detail)[:120])


class DeepgramSocket(ClientSocket):
    """Failures go out as Deepgram's `Error` message, then a close (1008 the client's fault, 1011 ours)."""

    async def close_with(self, failure: SessionFailed) -> None:
        await self.send(
            {
                "type": "Error",
                "variant": failure.code,
                "description": failure.message,
                "code": failure.code,
                "message": failure.message,
            }
        )
        await self.close(1008 if failure.code in CLIENT_FAULTS else 1011)


CONFIGURE_REFUSED = {
    "type": "ConfigureFailure",
    "code": "CONFIGURE_KEYTERMS_NOT_SUPPORTED",
    "description": "keyterms are fixed for the stream: give them as keyterm parameters when connecting",
}


class DeepgramFrames(ClientFrames):
    """The client's frames, with Deepgram's control messages."""

    events: DeepgramEvents
    socket: DeepgramSocket

    async def _control(self, text: str) -> SessionFailed | None:
        try:
            kind = json.loads(text).get("type")
        except (ValueError, AttributeError):
            kind = None
        match kind:
            case "KeepAlive":
                return None
            case "CloseStream":
                return await self.end_input()
            case "Finalize":
                if self.input_ended:
                    return None
                if (failure := await self.pushed()) is not None:  # the audio before it first
                    return failure
                self.events.finalize()
                await self.live.commit.remote(self.session_id)
                return None
            case "Configure":  # Deepgram's answer for a stream whose keyterms cannot change; the stream goes on
                await self.socket.send(CONFIGURE_REFUSED | {"request_id": self.events.request_id})
                return None
        message = 'text messages must be JSON {"type": "KeepAlive"}, {"type": "Finalize"} or {"type": "CloseStream"}'
        return SessionFailed(code="invalid_message", message=message)


class DeepgramConnection:
    def __init__(
        self, websocket: WebSocket, services: Services, key: ApiKey, options: LiveOptions, funds: Funds
    ) -> None:
        self.websocket, self.services, self.key, self.options = websocket, services, key, options
        self.socket = DeepgramSocket(websocket)
        self.meter = SessionMeter(options.settings, funds)

    async def run(self) -> None:
        live = self.services.live
        assert live is not None, "the live route is served only with a LiveTranscriber"
        opened = await live.open.remote(self.options.settings)
        if isinstance(opened, SessionFailed):
            return await self.socket.close_with(opened)
        session_id = self.socket.session_id = opened
        self.events = DeepgramEvents(self.options, session_id, self.services.config.whisper.model)  # its charge's id
        try:
            events = cast(DeploymentResponseGenerator[Any], live.options(stream=True).events.remote(session_id))
            ready = await anext(events)  # the stream is in place before any audio is sent
            if isinstance(ready, SessionFailed):
                return await self.socket.close_with(ready)
            frames = DeepgramFrames(self.websocket, live, session_id, self.services.config.live, self.meter)
            frames.events, frames.socket = self.events, self.socket
            relay = asyncio.create_task(relay_events(events, self.socket, frames, self.events.translate))
            receive = asyncio.create_task(frames.receive())
            ticks = asyncio.create_task(self._tick())
            done, _ = await asyncio.wait({relay, receive}, return_when=asyncio.FIRST_COMPLETED)
            if receive in done and (failure := receive.result()) is not None:
                relay.cancel()
                await self.socket.close_with(failure)
            for task in (relay, receive, ticks):  # the session ended, or the client left
                task.cancel()
            await asyncio.gather(relay, receive, ticks, return_exceptions=True)
        finally:
            await live.close.remote(session_id)
            await charge_session(self.services.ledger, session_id, self.key.owner, self.options.model, self.meter)

    async def _tick(self) -> None:
        """`UtteranceEnd`s as the received audio passes them."""
        if self.options.utterance_end_ms is None:
            return
        settings = self.options.settings
        bytes_per_ms = BYTES_PER_SAMPLE[settings.encoding] * settings.channels * settings.sample_rate / 1000
        while True:
            await asyncio.sleep(TICK_S)
            for payload in self.events.tick(self.meter.bytes_received / bytes_per_ms):
                await self.socket.send(payload)
