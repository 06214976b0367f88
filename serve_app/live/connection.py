"""One live session's WebSocket: frames in, events out, in the nexara realtime protocol.

The Ingress holds no audio: each binary frame is forwarded as it came to the LiveTranscriber
(`push`, awaited in order, frames that arrive meanwhile sent together: `serve_app.sessions.frames`), and one streaming
call (`events`) brings the session's events back, each sent as a JSON text frame (`sessions.relay`). A failure is
an `error` frame followed by the close code the SDK maps (`CLOSE_CODES`, `sessions.socket`); final words already
produced are sent before it. The session itself (opened, relayed, closed and charged once, shielded) is
`serve_app.sessions.runner`'s; this module is the nexara protocol's part of it: `session.created`.

Billing follows the bytes received (`sessions.usage`): when the key's money runs out mid-session, input stops there,
what was heard is finalised and sent, then `insufficient_balance` (4402). The session's audio is charged
once, at the end, in the same ledger as files.
"""

from fastapi import WebSocket

from deployments.billing.pricing import Funds
from deployments.live.events import MAX_SPEAKERS, ErrorReason, SessionFailed
from deployments.redaction import RedactionOptions
from deployments.types import KnownVoice
from serve_app.common.auth import ApiKey
from serve_app.common.services import Services
from serve_app.live.schemas import LiveSessionQuery, RealtimeAudioInfo, RealtimeDiarizationInfo, RealtimeSessionCreated
from serve_app.sessions.runner import LiveSessionRunner
from serve_app.sessions.socket import ClientSocket

SPEAKER_LATENCY_MS = 750
"""About how long after a word ends its speaker embedding has heard enough (half the window)."""


class LiveConnection:
    def __init__(
        self,
        websocket: WebSocket,
        services: Services,
        key: ApiKey,
        query: LiveSessionQuery,
        funds: Funds,
        voices: list[KnownVoice] | None = None,
        redaction: RedactionOptions | None = None,
    ) -> None:
        self.services, self.query = services, query
        self.settings = query.settings().model_copy(update={"voices": voices or [], "redaction": redaction})
        self.session = LiveSessionRunner(websocket, services, key, funds, ClientSocket(websocket), self._model)

    @staticmethod
    async def refuse(websocket: WebSocket, reason: ErrorReason, message: str) -> None:
        await ClientSocket.refuse(websocket, reason, message)

    async def run(self) -> None:
        await self.session.run(self._receive())

    async def _receive(self) -> SessionFailed | None:
        """The session opened and announced (`session.created`), then the client's frames."""
        if (failure := await self.session.open(self.settings)) is not None:
            return failure
        assert self.session.live_id is not None and self.session.frames is not None
        await self.session.socket.send(self._created(self.session.live_id).model_dump(exclude_none=True))
        return await self.session.frames.receive()

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
