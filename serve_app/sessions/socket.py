"""The session's side of the WebSocket going out: JSON text frames and the close, one at a time (the relay
and the frames' reader both send), and nothing once the socket is closed or the client gone."""

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from deployments.live.events import CLOSE_CODES, ErrorReason, SessionFailed

logger = logging.getLogger(__name__)


class ClientSocket:
    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.session_id = ""  # once the session is open: named when a failure is logged
        self._lock = asyncio.Lock()

    @staticmethod
    async def refuse(websocket: WebSocket, reason: ErrorReason, message: str) -> None:
        """An `error` frame and its close code, before any session exists."""
        await websocket.send_json(SessionFailed(code=reason, message=message).model_dump())
        await websocket.close(code=CLOSE_CODES[reason])

    async def close_with(self, failure: SessionFailed) -> None:
        """The failure as an `error` frame, then the close code the SDK maps to it."""
        if failure.code == "internal":
            logger.error("live session %s failed: %s", self.session_id, failure.message)
        await self.send(failure.model_dump())
        await self.close(CLOSE_CODES[failure.code])

    async def send(self, payload: dict[str, Any]) -> None:
        async with self._lock:
            if self.websocket.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                    await self.websocket.send_text(json.dumps(payload, separators=(",", ":")))

    async def close(self, code: int) -> None:
        async with self._lock:
            if self.websocket.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(RuntimeError):
                    await self.websocket.close(code=code)
