"""One live session from its admission to its charge, the same for every live protocol.

A protocol translates around it: its socket writes failures in the protocol's shape (`ClientSocket`), its
frames read the protocol's control messages (`ClientFrames`), its `translate` writes the LiveTranscriber's
events as the protocol's. The runner holds what must not differ between them: the key's session slot given
back, and the LiveTranscriber's session closed, however the session ends (it ended, the client left, a rule was
broken, or the handler was cancelled: a proxy closing the connection), under a cancellation shield. The charge
is the LiveTranscriber's, at that close, on the terms given at the opening (`SessionSettings.billing`): a
redeploy kills this replica after its grace period, and nothing here runs then; the LiveTranscriber's session
is closed when its `events` call is cancelled and charges it all the same, once.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, cast

import anyio
from fastapi import WebSocket
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from deployments.billing.pricing import Funds
from deployments.live.events import LiveEvent, SessionFailed, SessionSettings
from serve_app.common.auth import ApiKey
from serve_app.common.services import Services
from serve_app.sessions.calls import SessionCalls
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.relay import as_sent, relay_events
from serve_app.sessions.socket import ClientSocket
from serve_app.sessions.usage import SessionMeter, billing

logger = logging.getLogger(__name__)
CLOSE_WAIT_S = 30
"""How long the end of a session waits for the LiveTranscriber's `close` (which goes on after it)."""
Translate = Callable[[LiveEvent], list[dict[str, Any]]]
Receive = Coroutine[Any, Any, SessionFailed | None]


@contextlib.asynccontextmanager
async def session_slot(services: Services, key: ApiKey) -> AsyncIterator[None]:
    """The key's session slot (claimed by `admission.claim_session`) is given back however the session ends."""
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await services.rate_limiter.close_session.remote(key.owner)


class LiveSessionRunner:
    """The LiveTranscriber's session behind one socket: `open` it (now or at the first audio), then `run`
    the protocol's receive loop until the session or the client ends; closing and charging follow."""

    def __init__(
        self, websocket: WebSocket, services: Services, key: ApiKey, funds: Funds, socket: ClientSocket, model: str
    ) -> None:
        self.websocket, self.services, self.key, self.funds = websocket, services, key, funds
        self.socket, self.model = socket, model
        self.live_id: str | None = None
        self.meter: SessionMeter | None = None
        self.calls: SessionCalls | None = None  # every call of the session but its event stream
        self.frames: ClientFrames | None = None
        self.ended = asyncio.Event()  # the relay closed the socket: the session is over
        self._tasks: list[asyncio.Task[Any]] = []  # cancelled at the end: the relay, the protocol's timers
        self._relay: asyncio.Task[None] | None = None

    @property
    def live(self) -> DeploymentHandle[Any]:
        live = self.services.live
        assert live is not None, "live routes are served only with a LiveTranscriber"
        return live

    async def open(
        self,
        settings: SessionSettings,
        translate: Callable[[str], Translate] = lambda _: as_sent,
        frames: type[ClientFrames] = ClientFrames,
    ) -> SessionFailed | None:
        """The LiveTranscriber's session with these settings and its events relayed (each written by
        `translate(session_id)`); None once it is open, else why it is not."""
        settings = settings.model_copy(update={"billing": billing(self.key.owner, self.model, self.funds)})
        opened = await self.live.open.remote(settings)
        if isinstance(opened, SessionFailed):
            return opened
        self.live_id = self.socket.session_id = opened
        self.calls = SessionCalls(self.live, opened)
        self.meter = SessionMeter(settings, self.funds)
        events = cast(DeploymentResponseGenerator[Any], self.live.options(stream=True).events.remote(opened))
        ready = await anext(events)  # the stream is in place before any audio is sent
        if isinstance(ready, SessionFailed):
            return ready
        self.frames = frames(self.websocket, self.calls, self.services.config.live, self.meter)
        self._relay = self.alongside(relay_events(events, self.socket, self.frames, translate(opened)))
        self._relay.add_done_callback(lambda _: self.ended.set())
        self.alongside(self._heartbeat(self.calls))
        return None

    def alongside(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Work that runs while the session does (a protocol's timer), cancelled when it ends."""
        task = asyncio.create_task(work)
        self._tasks.append(task)
        return task

    async def _heartbeat(self, calls: SessionCalls) -> None:
        """The LiveTranscriber closes a session its edge stopped calling (this replica killed mid-session)."""
        while True:
            await asyncio.sleep(self.services.config.live.idle_timeout_s / 3)
            await calls.touch()

    async def run(self, receive: Receive) -> None:
        """`receive` (the client's input until it leaves, None, or breaks a rule: the failure sent) against the
        session's end; then the session is closed on the LiveTranscriber and charged, shielded."""
        receiving = asyncio.create_task(receive)
        ended = asyncio.create_task(self.ended.wait())
        try:
            done, _ = await asyncio.wait({receiving, ended}, return_when=asyncio.FIRST_COMPLETED)
            if receiving in done and (failure := receiving.result()) is not None:
                if self._relay is not None:
                    self._relay.cancel()
                await self.socket.close_with(failure)
        finally:
            with anyio.CancelScope(shield=True):  # closed even when the server cancels the handler
                forwarding = self.frames.forwarding if self.frames is not None else None
                tasks = [receiving, ended, *self._tasks, *([forwarding] if forwarding is not None else [])]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                try:  # bounded: a LiveTranscriber that does not answer closes it itself (its edge stops calling)
                    await asyncio.wait_for(asyncio.shield(self._close()), CLOSE_WAIT_S)
                except Exception:  # TimeoutError included
                    logger.exception("live session %s: could not close it on the LiveTranscriber", self.live_id)

    async def _close(self) -> None:
        if self.calls is None:
            return
        await self.calls.close()  # which charges it (once: the session's id is the charge's)
