"""The calls of one LiveTranscriber session, made one at a time.

The session's router (`deployments/live/_routing.py`) sends every call to the replica that holds the session,
and of two calls of one session routing at the same moment one would wait forever: calls made while serving
one request share its request id, by which the router matches a chosen replica to its call. The audio, the
heartbeat, a commit and the close come from different tasks; they all go through here, under one lock, so
that no two route together (a heartbeat routed beside a push left the push unanswered and the session open).
The event stream is the exception: it starts before any of these (`SessionReady`) and stays open.
"""

import asyncio
from typing import Any

from ray.serve.handle import DeploymentHandle

from deployments.live.events import SessionFailed


class SessionCalls:
    def __init__(self, live: DeploymentHandle[Any], session_id: str) -> None:
        self.live, self.session_id = live, session_id
        self._one_at_a_time = asyncio.Lock()

    async def push(self, frames: bytes) -> SessionFailed | None:
        async with self._one_at_a_time:
            failure: SessionFailed | None = await self.live.push.remote(self.session_id, frames)
            return failure

    async def end_input(self) -> None:
        await self._call("end_input")

    async def commit(self) -> None:
        """Everything pushed so far is final (the caller has waited for the pushes: `ClientFrames.pushed`)."""
        await self._call("commit")

    async def clear(self) -> None:
        await self._call("clear")

    async def touch(self) -> None:
        await self._call("touch")

    async def close(self) -> None:
        await self._call("close")

    async def _call(self, method: str) -> None:
        async with self._one_at_a_time:
            await getattr(self.live, method).remote(self.session_id)
