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
from collections.abc import Callable
from typing import cast

from fastapi import APIRouter, HTTPException, WebSocket
from fastapi.responses import JSONResponse

from deployments.billing.pricing import Funds
from deployments.live.events import BYTES_PER_SAMPLE, SessionFailed
from serve_app.common.auth import TOKEN_SUBPROTOCOL, ApiKey
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.services import Services
from serve_app.deepgram._live_events import DeepgramEvents
from serve_app.deepgram._live_params import LiveOptions, live_options
from serve_app.deepgram.config import DEEPGRAM
from serve_app.deepgram.errors import error_body
from serve_app.sessions.admission import claim_session, deny_upgrade, funded_key
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.runner import LiveSessionRunner, Translate, session_slot
from serve_app.sessions.socket import ClientSocket

router = APIRouter(tags=["deepgram"])
TICK_S = 0.1
"""How often the edge looks whether an `UtteranceEnd` is due."""
CLIENT_FAULTS = {"invalid_config", "invalid_audio", "invalid_message", "insufficient_balance", "unauthorized"}


@router.websocket("/v1/listen")
async def listen_live(websocket: WebSocket, services: ServicesDependency) -> None:
    try:  # the checks every HTTP route makes, in the same order; a refusal is an HTTP answer
        key, funds = await funded_key(websocket, services)
        options = live_options(websocket.query_params.multi_items(), DEEPGRAM.of(services.config).models)
        await claim_session(services, key)
    except HTTPException as refusal:
        return await _refuse(websocket, refusal)
    async with session_slot(services, key):
        offered = websocket.scope.get("subprotocols", [])
        await websocket.accept(subprotocol=TOKEN_SUBPROTOCOL if TOKEN_SUBPROTOCOL in offered else None)
        await DeepgramConnection(websocket, services, key, options, funds).run()


async def _refuse(websocket: WebSocket, refusal: HTTPException) -> None:
    """An HTTP answer in Deepgram's shape instead of the upgrade, where the server can send one."""
    body = error_body(refusal.status_code, str(refusal.detail))
    response = JSONResponse(body, status_code=refusal.status_code, headers={"dg-error": body["err_msg"][:200]})
    await deny_upgrade(websocket, refusal, response)


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
                await self.calls.commit()
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
        self.services, self.options = services, options
        self.session = LiveSessionRunner(websocket, services, key, funds, DeepgramSocket(websocket), options.model)

    async def run(self) -> None:
        await self.session.run(self._receive())

    async def _receive(self) -> SessionFailed | None:
        """The session opened, its `UtteranceEnd` timer started, then the client's frames and messages."""
        model = self.services.config.whisper.model
        failure = await self.session.open(self.options.settings, self._events_for(model), DeepgramFrames)
        if failure is not None:
            return failure
        frames = cast(DeepgramFrames, self.session.frames)
        frames.events, frames.socket = self.events, cast(DeepgramSocket, self.session.socket)
        self.session.alongside(self._tick())
        return await frames.receive()

    def _events_for(self, model: str) -> Callable[[str], Translate]:
        def translate(session_id: str) -> Translate:
            self.events = DeepgramEvents(self.options, session_id, model)  # the session's id is its charge's
            return self.events.translate

        return translate

    async def _tick(self) -> None:
        """`UtteranceEnd`s as the received audio passes them."""
        if self.options.utterance_end_ms is None:
            return
        settings = self.options.settings
        bytes_per_ms = BYTES_PER_SAMPLE[settings.encoding] * settings.channels * settings.sample_rate / 1000
        while True:
            await asyncio.sleep(TICK_S)
            assert self.session.meter is not None
            for payload in self.events.tick(self.session.meter.bytes_received / bytes_per_ms):
                await self.session.socket.send(payload)
