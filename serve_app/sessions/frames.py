"""The client's frames coming in. Binary frames are audio, forwarded to the LiveTranscriber in order: one
`push` at a time, with the frames that arrived during the last one sent together. Text frames are a
keepalive or the end of input. A frame over the size limit, an unknown text frame or silence past the idle
timeout ends the session; where the key's money runs out, input stops and the session ends as
`insufficient_balance` once what was heard is finalised."""

import asyncio
import json

from fastapi import WebSocket

from deployments.config import LiveConfig
from deployments.live.events import SessionFailed
from serve_app.sessions.calls import SessionCalls
from serve_app.sessions.usage import SessionMeter


class ClientFrames:
    def __init__(
        self,
        websocket: WebSocket,
        calls: SessionCalls,
        limits: LiveConfig,
        meter: SessionMeter,
    ) -> None:
        self.websocket, self.calls = websocket, calls
        self.limits = limits
        self.meter = meter
        self.input_ended = False
        self.failure_at_end: SessionFailed | None = None  # sent instead of session.ended (funds ran out)
        self.unsent = bytearray()
        self.forwarding: asyncio.Task[SessionFailed | None] | None = None

    async def receive(self) -> SessionFailed | None:
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
                failure = await self.audio(message["bytes"])
            else:
                failure = await self._control(message.get("text") or "")
            if failure is not None:
                return failure

    async def pushed(self) -> SessionFailed | None:
        """Why forwarding stopped, if a push failed; once the frames sent so far are pushed."""
        return await self.forwarding if self.forwarding is not None else None

    async def audio(self, frame: bytes) -> SessionFailed | None:
        """One frame of audio (empty: the end of input), paid for and forwarded in order."""
        if len(frame) > self.limits.max_frame_bytes:
            message = f"binary frames must be at most {self.limits.max_frame_bytes} bytes; this one had {len(frame)}"
            return SessionFailed(code="invalid_audio", message=message)
        if not frame:
            return await self.end_input()
        if self.input_ended:
            return None
        paid = self.meter.admit(frame)
        if len(paid) < len(frame):
            price = self.meter.price
            message = f"the key's balance is spent ({price.balance:.4g} {price.currency}): top it up to continue"
            self.failure_at_end = SessionFailed(code="insufficient_balance", message=message)
        self.unsent += paid
        if self.forwarding is None or self.forwarding.done():
            failure = self.forwarding.result() if self.forwarding is not None else None
            if failure is not None:
                return failure
            self.forwarding = asyncio.create_task(self._forward())
        if self.failure_at_end is not None:
            return await self.end_input()
        return None

    async def _forward(self) -> SessionFailed | None:
        """Frames to the session in order: one push at a time, with whatever arrived during the last one."""
        while self.unsent:
            frames, self.unsent = bytes(self.unsent), bytearray()
            failure = await self.calls.push(frames)
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
            return await self.end_input()
        message = 'text frames must be JSON: {"type": "keepalive"} or {"type": "input_audio.end"}'
        return SessionFailed(code="invalid_message", message=message)

    async def end_input(self) -> SessionFailed | None:
        if self.input_ended:
            return None
        self.input_ended = True
        if self.forwarding is not None and (failure := await self.forwarding) is not None:
            return failure
        await self.calls.end_input()
        return None
