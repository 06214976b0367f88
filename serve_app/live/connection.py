"""One live session's WebSocket: frames in, events out, in the nexara realtime protocol.

The Ingress holds no audio: each binary frame is forwarded as it came to the LiveTranscriber
(`push`, awaited in order, frames that arrive meanwhile sent together), and one streaming call (`events`)
brings the session's events back, each sent as a JSON text frame. A failure is an `error` frame followed
by the close code the SDK maps (`CLOSE_CODES`); final words already produced are sent before it.

Billing follows the bytes received: when the key's money runs out mid-session, input stops there, what was
heard is finalised and sent, then `insufficient_balance` (4402). The session's audio is charged once, at
the end, in the same ledger as files.
"""

import asyncio
import contextlib
import json
import logging

from fastapi import WebSocket
from ray.serve.handle import DeploymentResponseGenerator
from starlette.datastructures import State
from starlette.websockets import WebSocketDisconnect, WebSocketState

from deployments.billing.ledger import ChargeDetails
from deployments.live.events import (
    BYTES_PER_SAMPLE,
    CLOSE_CODES,
    MAX_SPEAKERS,
    ErrorReason,
    SessionEnded,
    SessionFailed,
)
from serve_app.auth import ApiKey, Funds
from serve_app.schemas import LiveSessionQuery, RealtimeAudioInfo, RealtimeDiarizationInfo, RealtimeSessionCreated

logger = logging.getLogger(__name__)

SPEAKER_LATENCY_MS = 750
"""About how long after a word ends its speaker embedding has heard enough (half the window)."""


class LiveConnection:
    def __init__(self, websocket: WebSocket, state: State, key: ApiKey, query: LiveSessionQuery, funds: Funds) -> None:
        self.websocket = websocket
        self.live = state.live
        self.ledger = state.ledger
        self.config = state.config
        self.limits = state.config.live
        self.key = key
        self.query = query
        self.settings = query.settings()
        self.price = funds.price
        self.session_id = ""
        self.bytes_per_frame = BYTES_PER_SAMPLE[query.encoding] * query.channels
        self.bytes_received = 0
        # the money left when the session opened, as bytes of audio
        self.bytes_allowed = (
            funds.audio_s(self.settings.channels_transcribed) * query.sample_rate * self.bytes_per_frame
        )
        self.send_lock = asyncio.Lock()
        self.input_ended = False
        self.failure_at_end: SessionFailed | None = None  # sent instead of session.ended (funds ran out)
        self.unsent = bytearray()
        self.forwarding: asyncio.Task | None = None

    @staticmethod
    async def refuse(websocket: WebSocket, reason: ErrorReason, message: str) -> None:
        await websocket.send_json(SessionFailed(code=reason, message=message).model_dump())
        await websocket.close(code=CLOSE_CODES[reason])

    async def run(self) -> None:
        opened = await self.live.open.remote(self.settings)
        if isinstance(opened, SessionFailed):
            return await self._close_with(opened)
        self.session_id = opened
        try:
            events = self.live.options(stream=True).events.remote(self.session_id)
            ready = await anext(events)  # the stream is in place before any audio is sent
            if isinstance(ready, SessionFailed):
                return await self._close_with(ready)
            await self._send(self._created().model_dump(exclude_none=True))
            relay = asyncio.create_task(self._relay(events))
            receive = asyncio.create_task(self._receive())
            done, _ = await asyncio.wait({relay, receive}, return_when=asyncio.FIRST_COMPLETED)
            if receive in done and (failure := receive.result()) is not None:
                relay.cancel()
                await self._close_with(failure)
            for task in (relay, receive):  # the session ended, or the client left
                task.cancel()
            await asyncio.gather(relay, receive, return_exceptions=True)
        finally:
            await self.live.close.remote(self.session_id)
            await self._charge()

    def _created(self) -> RealtimeSessionCreated:
        query = self.query
        return RealtimeSessionCreated(
            session_id=self.session_id,
            model=self.config.model_ids[0],
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

    async def _receive(self) -> SessionFailed | None:
        """Client frames until the client is gone (None) or breaks a rule (the failure to send)."""
        idle_s = self.limits.idle_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(self.websocket.receive(), timeout=None if self.input_ended else idle_s)
            except TimeoutError:
                return SessionFailed(code="idle_timeout", message=f"no audio or keepalive for {idle_s:g} s")
            if message["type"] == "websocket.disconnect":
                return None
            if message.get("bytes") is not None:
                failure = await self._audio(message["bytes"])
            else:
                failure = await self._control(message.get("text") or "")
            if failure is not None:
                return failure

    async def _audio(self, frame: bytes) -> SessionFailed | None:
        if len(frame) > self.limits.max_frame_bytes:
            message = f"binary frames must be at most {self.limits.max_frame_bytes} bytes; this one had {len(frame)}"
            return SessionFailed(code="invalid_audio", message=message)
        if not frame:
            return await self._end_input()
        if self.input_ended:
            return None
        room = self.bytes_allowed - self.bytes_received
        if len(frame) > room:
            frame = frame[: max(0, int(room))]
            price = self.price
            message = f"the key's balance is spent ({price.balance:.4g} {price.currency}): top it up to continue"
            self.failure_at_end = SessionFailed(code="insufficient_balance", message=message)
        self.bytes_received += len(frame)
        self.unsent += frame
        if self.forwarding is None or self.forwarding.done():
            failure = self.forwarding.result() if self.forwarding is not None else None
            if failure is not None:
                return failure
            self.forwarding = asyncio.create_task(self._forward())
        if self.failure_at_end is not None:
            return await self._end_input()
        return None

    async def _forward(self) -> SessionFailed | None:
        """Frames to the session in order: one push at a time, with whatever arrived during the last one."""
        while self.unsent:
            frames, self.unsent = bytes(self.unsent), bytearray()
            failure = await self.live.push.remote(self.session_id, frames)
            if failure is not None:
                return failure
        return None

    async def _control(self, text: str) -> SessionFailed | None:
        try:
            kind = json.loads(text).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind == "keepalive":
            return None
        if kind == "input_audio.end":
            return await self._end_input()
        message = 'text frames must be JSON: {"type": "keepalive"} or {"type": "input_audio.end"}'
        return SessionFailed(code="invalid_message", message=message)

    async def _end_input(self) -> SessionFailed | None:
        if self.input_ended:
            return None
        self.input_ended = True
        if self.forwarding is not None and (failure := await self.forwarding) is not None:
            return failure
        await self.live.end_input.remote(self.session_id)
        return None

    async def _relay(self, events: DeploymentResponseGenerator) -> None:
        """The session's events to the client; the last one closes the socket."""
        try:
            async for event in events:
                if isinstance(event, SessionEnded):
                    if self.failure_at_end is not None:
                        return await self._close_with(self.failure_at_end)
                    await self._send(event.model_dump())
                    return await self._close(1000)
                if isinstance(event, SessionFailed):
                    return await self._close_with(event)
                await self._send(event.model_dump(exclude_none=True))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the LiveTranscriber's replica died mid-session
            return await self._close_with(SessionFailed(code="internal", message=f"the session was lost: {error}"))
        pushed = await self.forwarding if self.forwarding is not None else None  # it holds why, if it ended it
        await self._close_with(pushed or SessionFailed(code="internal", message="the session ended unexpectedly"))

    async def _close_with(self, failure: SessionFailed) -> None:
        if failure.code == "internal":
            logger.error("live session %s failed: %s", self.session_id, failure.message)
        await self._send(failure.model_dump())
        await self._close(CLOSE_CODES[failure.code])

    async def _send(self, payload: dict) -> None:
        async with self.send_lock:
            if self.websocket.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                    await self.websocket.send_text(json.dumps(payload, separators=(",", ":")))

    async def _close(self, code: int) -> None:
        async with self.send_lock:
            if self.websocket.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(RuntimeError):
                    await self.websocket.close(code=code)

    async def _charge(self) -> None:
        """The audio received, times the channels transcribed, once per session."""
        seconds = self.bytes_received / self.bytes_per_frame / self.query.sample_rate
        billed = seconds * self.settings.channels_transcribed
        if billed <= 0:
            return
        details = ChargeDetails(
            task="realtime",
            model=self.config.model_ids[0],
            bytes=self.bytes_received,
            rate_per_min=self.price.rate_per_min,
        )  # priced as an HTTP request's charge is (transcriptions.charge_details)
        try:
            await self.ledger.charge.remote(self.session_id, self.key.owner, billed, details)
        except Exception:  # the session is over; a failed charge must be seen in the log, not by the client
            logger.exception("could not charge live session %s (%.1f s)", self.session_id, billed)
