"""One live session's WebSocket: frames in, events out, in the nexara realtime protocol.

The Ingress holds no audio: each binary frame is forwarded as it came to the LiveTranscriber
(`push`, awaited in order, frames that arrive meanwhile sent together: `serve_app.sessions.frames`), and one streaming
call (`events`) brings the session's events back, each sent as a JSON text frame (`sessions.relay`). A failure is
an `error` frame followed by the close code the SDK maps (`CLOSE_CODES`, `sessions.socket`); final words already
produced are sent before it.

Billing follows the bytes received (`sessions.usage`): when the key's money runs out mid-session, input stops there,
what was heard is finalised and sent, then `insufficient_balance` (4402). The session's audio is charged
once, at the end, in the same ledger as files.
"""

import asyncio
from typing import Any, cast

from fastapi import WebSocket
from ray.serve.handle import DeploymentResponseGenerator

from deployments.billing.pricing import Funds
from deployments.live.events import MAX_SPEAKERS, ErrorReason, SessionFailed
from serve_app.common.auth import ApiKey
from serve_app.common.services import Services
from serve_app.live.schemas import LiveSessionQuery, RealtimeAudioInfo, RealtimeDiarizationInfo, RealtimeSessionCreated
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.relay import relay_events
from serve_app.sessions.socket import ClientSocket
from serve_app.sessions.usage import SessionMeter, charge_session

SPEAKER_LATENCY_MS = 750
"""About how long after a word ends its speaker embedding has heard enough (half the window)."""


class LiveConnection:
    def __init__(
        self, websocket: WebSocket, services: Services, key: ApiKey, query: LiveSessionQuery, funds: Funds
    ) -> None:
        self.websocket, self.services, self.key, self.query = websocket, services, key, query
        self.settings = query.settings()
        self.socket = ClientSocket(websocket)
        self.meter = SessionMeter(self.settings, funds)

    @staticmethod
    async def refuse(websocket: WebSocket, reason: ErrorReason, message: str) -> None:
        await ClientSocket.refuse(websocket, reason, message)

    async def run(self) -> None:
        live = self.services.live
        assert live is not None, "the live route is served only with a LiveTranscriber"
        opened = await live.open.remote(self.settings)
        if isinstance(opened, SessionFailed):
            return await self.socket.close_with(opened)
        session_id = self.socket.session_id = opened
        try:
            events = cast(DeploymentResponseGenerator[Any], live.options(stream=True).events.remote(session_id))
            ready = await anext(events)  # the stream is in place before any audio is sent
            if isinstance(ready, SessionFailed):
                return await self.socket.close_with(ready)
            await self.socket.send(self._created(session_id).model_dump(exclude_none=True))
            frames = ClientFrames(self.websocket, live, session_id, self.services.config.live, self.meter)
            relay = asyncio.create_task(relay_events(events, self.socket, frames))
            receive = asyncio.create_task(frames.receive())
            done, _ = await asyncio.wait({relay, receive}, return_when=asyncio.FIRST_COMPLETED)
            if receive in done and (failure := receive.result()) is not None:
                relay.cancel()
                await self.socket.close_with(failure)
            for task in (relay, receive):  # the session ended, or the client left
                task.cancel()
            await asyncio.gather(relay, receive, return_exceptions=True)
        finally:
            await live.close.remote(session_id)
            await charge_session(self.services.ledger, session_id, self.key.owner, self._model, self.meter)

    @property
    def _model(self) -> str:
        return self.services.config.model_ids[0]

    def _created(self, session_id: str) -> RealtimeSessionCreated:
        query = self.query
        return RealtimeSessionCreated(
            session_id=session_id,
            model=self._model,
            delay_ms=query.delay_ms,
            audio=RealtimeAudioInfo(
                encoding=query.encoding,
                sample_rate=query.sample_rate,
                channels=query.channels,
                multichannel=query.multichannel,
            ),
            diarization=RealtimeDiarizationInfo(max_speakers=MAX_SPEAKERS, latency_ms=SPEAKER_LATENCY_MS)
            if query.diarize
            else None,
            turn_detection=query.turn_detection,
            client_id=query.client_id,
        )
