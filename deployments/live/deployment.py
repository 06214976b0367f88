"""LiveTranscriber: the deployment that holds live sessions (`deployments/live/_session.py`).

The Ingress owns the WebSocket and forwards raw PCM frames here (`push`), reading events back from one
streaming call per session (`events`); decoded audio lives only here. Whisper runs on the shared, batched
Transcriber (live readings and file chunks share its batches), speaker embeddings on the Diarizer, and
the Smart Turn model, small, here.

A session whose Ingress is gone (killed by a redeploy: the LiveTranscriber is not told, and its `events` call
goes on) is closed once it has not been heard from for `ORPHANED_AFTER` idle timeouts: the edge calls `touch`
while it holds the session, audio or not.

A session is charged here, when it closes, for the audio pushed into it (its `SessionSettings.billing`): the
Ingress that opened it may be gone by then (a redeploy kills it once its grace period is over); the charge's
id, the session's, makes it happen once.

A session's calls must reach the replica that holds it: its id names that replica, and the deployment's
request router (`deployments/live/_routing.py`) sends every call there, so the deployment scales to any
number of replicas. A call for a session its replica no longer holds (it restarted) ends the session with
`internal`.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from ray import serve
from ray.serve.config import RequestRouterConfig
from ray.serve.handle import DeploymentHandle

from deployments.billing import pricing
from deployments.billing.ledger import get_or_create_ledger
from deployments.config import LiveConfig, RedactionConfig, StorageConfig, VocabularyConfig
from deployments.live._models import LiveModels
from deployments.live._routing import SessionAffinityRouter, session_id_on
from deployments.live._second_readings import Outcome, ReplicaLoad, SecondReadings
from deployments.live._session import LiveSession
from deployments.live._smart_turn import SmartTurnModel
from deployments.live.events import LiveEvent, SessionFailed, SessionReady, SessionSettings
from deployments.metrics import LiveMetrics
from deployments.redaction.applied import redactor_for
from deployments.retry import retry_on_worker_loss
from deployments.types import BatchHints, ChunkOptions, ChunkTranscript

logger = logging.getLogger("ray.serve")
ORPHANED_AFTER = 2
"""Idle timeouts without a call from the session's edge (`touch`, `push`...) after which it is closed."""
SESSION_GONE = "the session is not on this server any more (it restarted): open a new one"


@serve.deployment(
    max_ongoing_requests=1000,  # sessions wait on other deployments; capacity is `max_sessions`
    # Ray annotates every keyword of RequestRouterConfig() as a dict.
    request_router_config=RequestRouterConfig(request_router_class=SessionAffinityRouter),  # type: ignore[arg-type]
)
class LiveTranscriber:
    def __init__(
        self,
        transcriber: DeploymentHandle[Any],
        diarizer: DeploymentHandle[Any],
        config: LiveConfig,
        vocabulary: VocabularyConfig | None = None,
        storage: StorageConfig | None = None,
        redaction: RedactionConfig | None = None,
    ) -> None:
        self.transcriber = transcriber
        self.redaction = redaction or RedactionConfig(secret_file=str(StorageConfig().state_path / "redaction.secret"))
        self.diarizer = diarizer
        self.config = config
        self.smart_turn = SmartTurnModel()
        self.sessions: dict[str, LiveSession] = {}
        self.received: dict[str, int] = {}  # bytes pushed into each open session: what it is charged for
        self.heard: dict[str, float] = {}  # when each session's edge last called
        self.reaper: asyncio.Task[None] | None = None
        self.ledger = get_or_create_ledger(storage) if storage is not None else None  # None: sessions not charged
        self.metrics = LiveMetrics()
        self.readings = SecondReadings(load=self._load, record=self._record)
        self.models = LiveModels(
            transcribe=self._read,
            reread=self._reread,
            embed_voices=self._embed_voices,
            turn_probability=self._turn_probability,
            vocabulary=vocabulary or VocabularyConfig(),
        )

    async def open(self, settings: SessionSettings) -> str | SessionFailed:
        """A new session's id, or why there is none."""
        if len(self.sessions) >= self.config.max_sessions:
            message = f"all {self.config.max_sessions} live sessions of this server are in use: retry later"
            return SessionFailed(code="session_full", message=message)
        session_id = session_id_on(serve.get_replica_context().replica_id.unique_id)
        redactor = redactor_for(settings.redaction, self.redaction)
        self.sessions[session_id] = LiveSession(settings, self.config, self.models, self.readings, redactor)
        self.received[session_id] = 0
        self.heard[session_id] = time.monotonic()
        if self.reaper is None:
            self.reaper = asyncio.create_task(self._close_orphans())
        self.metrics.sessions_open.set(len(self.sessions))
        return session_id

    async def push(self, session_id: str, frame: bytes) -> SessionFailed | None:
        session = self.sessions.get(session_id)
        if session is None:
            return SessionFailed(code="internal", message=SESSION_GONE)
        self.received[session_id] += len(frame)
        self.heard[session_id] = time.monotonic()
        return session.push(frame)

    async def touch(self, session_id: str) -> None:
        """The session's edge still holds it (called every third of the idle timeout)."""
        if session_id in self.heard:
            self.heard[session_id] = time.monotonic()

    async def commit(self, session_id: str) -> None:
        """Everything pushed so far is final and the open turn ends (OpenAI's `input_audio_buffer.commit`)."""
        if (session := self.sessions.get(session_id)) is not None:
            session.mark("commit")

    async def clear(self, session_id: str) -> None:
        """What was pushed and is not final yet is dropped (OpenAI's `input_audio_buffer.clear`)."""
        if (session := self.sessions.get(session_id)) is not None:
            session.mark("clear")

    async def end_input(self, session_id: str) -> None:
        if (session := self.sessions.get(session_id)) is not None:
            session.end_input()

    async def events(self, session_id: str) -> AsyncIterator[LiveEvent]:
        """`SessionReady`, then the session's events as they happen; the session is gone once they end."""
        session = self.sessions.get(session_id)
        if session is None:
            yield SessionFailed(code="internal", message=SESSION_GONE)
            return
        yield SessionReady()
        try:
            async for event in session.events():
                yield event
        finally:  # the caller gone (the client left, or the Ingress was killed): closed and charged all the same
            await asyncio.shield(self.close(session_id))

    async def close(self, session_id: str) -> None:
        if (session := self.sessions.pop(session_id, None)) is not None:
            self.metrics.sessions_open.set(len(self.sessions))
            received = self.received.pop(session_id, 0)
            self.heard.pop(session_id, None)
            try:
                await session.close()
            finally:
                await self._charge(session_id, session.settings, received)
            outcomes = session.second_readings
            if skipped := {outcome: n for outcome, n in outcomes.items() if outcome.skipped}:
                logger.warning(
                    "live session %s: %d of %d groups of utterances kept their streamed words as the final"
                    " transcript, the replica could not keep up (%s)",
                    session_id,
                    sum(skipped.values()),
                    outcomes.total(),
                    ", ".join(f"{outcome}: {n}" for outcome, n in sorted(skipped.items())),
                )

    async def _close_orphans(self) -> None:
        """Closes (and so charges) the sessions whose edge has not called for `ORPHANED_AFTER` idle timeouts."""
        while True:
            await asyncio.sleep(1)
            silent_since = time.monotonic() - ORPHANED_AFTER * self.config.idle_timeout_s
            for session_id in [sid for sid, heard in self.heard.items() if heard < silent_since]:
                logger.warning("live session %s: its edge is gone (no call for %g s); closed", session_id,
                               ORPHANED_AFTER * self.config.idle_timeout_s)  # fmt: skip
                await self.close(session_id)

    async def _charge(self, session_id: str, settings: SessionSettings, received: int) -> None:
        """The session's audio, charged once (its id is the charge's), priced as the edge said when it opened."""
        billing, billed_s = settings.billing, settings.billed_s(received)
        if billing is None or self.ledger is None or billed_s <= 0:
            return
        details = billing.details.model_copy(update={"bytes": received})
        try:
            await pricing.charge(self.ledger, session_id, billing.owner, billed_s, details)
        except Exception:  # the session is over; a failed charge must be seen in the log, not by the client
            logger.exception("could not charge live session %s (%.1f s)", session_id, billed_s)

    def _load(self) -> ReplicaLoad:
        """What the replica's sessions, which share its Transcriber, have waiting."""
        sessions = self.sessions.values()
        return ReplicaLoad(max((s.behind_s for s in sessions), default=0.0), sum(s.waiting for s in sessions))

    def _record(self, outcome: Outcome) -> None:
        self.metrics.second_readings.inc(tags={"outcome": outcome.value})

    async def _read(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        """A streaming reading: someone is listening."""
        return await self._transcribe(samples, options, BatchHints(interactive=True))

    async def _reread(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        """An utterance's second reading: in a lane of its own, so that no streaming reading waits for it."""
        return await self._transcribe(samples, options, BatchHints(interactive=True, second_reading=True))

    async def _transcribe(self, samples: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        call = lambda: self.transcriber.transcribe_chunk.remote(samples, options, hints)  # noqa: E731
        return await retry_on_worker_loss(call, "a live reading")

    async def _embed_voices(self, windows: list[np.ndarray]) -> np.ndarray:
        return await retry_on_worker_loss(lambda: self.diarizer.embed_voices.remote(windows), "live speakers")

    async def _turn_probability(self, speech: np.ndarray) -> float:
        return await asyncio.to_thread(self.smart_turn.probability, speech)
