"""The callback outbox: one row per job that asked for a `callback_url`, added by the job store in the same
transaction as the job's final record (`enqueue`), so a killed tracker, a restart or a lost node delays a
callback but never loses it. Each ingress replica claims due rows with a lease (`CallbackOutbox.claim`): two
replicas never send one row at once, and a dead replica's claim expires. A delivery is at least once: a claim
that expired while its sender still waited is sent again, and receivers drop repeats by the job id.

The rows are domain state; what is sent (the job object, signed) is the edge's (serve_app/callbacks/).
"""

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, and_, delete, select, update

from deployments.config import CallbacksConfig
from deployments.storage.database import (
    callbacks,
    database_storage,
    insert_ignoring_duplicates,
    one_statement,
    writing,
)


class CallbackStatus(StrEnum):
    pending = "pending"
    delivered = "delivered"
    failed = "failed"


class CallbackState(BaseModel):
    """A job's callback as its poll shows it."""

    status: CallbackStatus = CallbackStatus.pending
    attempts: int = 0
    last_status: int | None = None


@dataclass(frozen=True)
class Claim:
    """A due callback this sender holds until its lease ends."""

    job_id: str
    owner: str
    url: str
    ended_at: float
    attempts: int
    """Attempts made before this one."""
    last_status: int | None
    token: str

    def state(self) -> CallbackState:
        return CallbackState(attempts=self.attempts, last_status=self.last_status)


def enqueue(connection: Connection, job_id: str, owner: str, url: str, ended_at: float) -> None:
    """Add the job's callback, due now, in the caller's transaction (the one storing the job's end). Saving the
    same end again adds nothing."""
    row = {"job_id": job_id, "owner": owner, "url": url, "ended_at": ended_at, "status": CallbackStatus.pending,
           "attempts": 0, "next_attempt_at": ended_at, "lease_until": 0.0}  # fmt: skip
    connection.execute(insert_ignoring_duplicates(connection, callbacks, ["job_id"]), row)


def forget(connection: Connection, job_ids: list[str]) -> None:
    """Drop expired jobs' callbacks, in the caller's transaction (the one deleting the jobs)."""
    connection.execute(delete(callbacks).where(callbacks.c.job_id.in_(job_ids)))


def retry_delay(attempts: int, config: CallbacksConfig, rng: Callable[[], float] = random.random) -> float:
    """The wait after `attempts` failed attempts: doubling from `backoff_base_s` up to `backoff_max_s`, with
    "equal jitter" (half of it random), so that receivers that come back are not hit by every sender at once."""
    delay = min(config.backoff_max_s, config.backoff_base_s * 2.0 ** min(attempts - 1, 60))
    return delay / 2 + rng() * delay / 2


class CallbackOutbox:
    """The outbox's rows, for the senders (the ingress replicas) and the polls. `retention_s` is the jobs':
    retries stop once the next would come after the result is deleted, after at least `min_attempts`. Calls
    block (queries): run them off the event loop."""

    def __init__(
        self,
        engine: Engine,
        config: CallbacksConfig,
        retention_s: float,
        clock: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.engine, self.config, self.retention_s, self.clock, self.rng = engine, config, retention_s, clock, rng

    def state(self, job_id: str) -> CallbackState | None:
        """The job's callback; None before the job has ended (its callback is then pending, not yet tried)."""
        query = select(callbacks.c.status, callbacks.c.attempts, callbacks.c.last_status)
        with one_statement(self.engine) as connection:
            row = connection.execute(query.where(callbacks.c.job_id == job_id)).first()
        if row is None:
            return None
        return CallbackState(status=CallbackStatus(row.status), attempts=row.attempts, last_status=row.last_status)

    def claim(self, limit: int) -> list[Claim]:
        """Up to `limit` due callbacks, held by this caller for `lease_s`. A plain read first: most rounds find
        nothing due and take no write lock."""
        now = self.clock()
        due = and_(
            callbacks.c.status == CallbackStatus.pending,
            callbacks.c.next_attempt_at <= now,
            callbacks.c.lease_until <= now,
        )
        with self.engine.connect() as connection:
            if connection.execute(select(callbacks.c.job_id).where(due).limit(1)).first() is None:
                return []
        token = uuid.uuid4().hex
        with database_storage("the callback outbox"), writing(self.engine) as connection:
            chosen = select(callbacks.c.job_id).where(due).order_by(callbacks.c.next_attempt_at).limit(limit)
            if connection.dialect.name == "postgresql":  # another replica's rows in its claim are skipped
                chosen = chosen.with_for_update(skip_locked=True)
            # `due` again on the row itself: a row claimed meanwhile (read committed) no longer matches.
            statement = (
                update(callbacks)
                .where(due, callbacks.c.job_id.in_(chosen.scalar_subquery()))
                .values(lease_until=now + self.config.lease_s, claim=token)
                .returning(
                    callbacks.c.job_id,
                    callbacks.c.owner,
                    callbacks.c.url,
                    callbacks.c.ended_at,
                    callbacks.c.attempts,
                    callbacks.c.last_status,
                )
            )
            rows = connection.execute(statement).all()
        return [
            Claim(row.job_id, row.owner, row.url, row.ended_at, row.attempts, row.last_status, token) for row in rows
        ]

    def delivered(self, claim: Claim, status: int) -> CallbackState:
        return self._record(claim, CallbackStatus.delivered, status, None)

    def attempt_failed(self, claim: Claim, status: int | None) -> CallbackState:
        """Another attempt after the backoff, or `failed` when the next would come after the result's expiry
        and `min_attempts` are made."""
        attempts = claim.attempts + 1
        next_at = self.clock() + retry_delay(attempts, self.config, self.rng)
        if attempts >= self.config.min_attempts and next_at > claim.ended_at + self.retention_s:
            return self._record(claim, CallbackStatus.failed, status, None)
        return self._record(claim, CallbackStatus.pending, status, next_at)

    def give_up(self, claim: Claim, status: int | None = None) -> CallbackState:
        """Failed for good: the job is gone, or there is no secret to sign it with."""
        return self._record(claim, CallbackStatus.failed, status, None)

    def _record(
        self, claim: Claim, outcome: CallbackStatus, status: int | None, next_at: float | None
    ) -> CallbackState:
        """The attempt's outcome, recorded only while `claim` still holds the row (a sender whose lease expired
        and whose row another replica took records nothing)."""
        values = {"status": outcome, "attempts": claim.attempts + 1, "last_status": status, "lease_until": 0.0,
                  "claim": None}  # fmt: skip
        if next_at is not None:
            values["next_attempt_at"] = next_at
        held = and_(callbacks.c.job_id == claim.job_id, callbacks.c.claim == claim.token)
        with database_storage("the callback outbox"), writing(self.engine) as connection:
            connection.execute(update(callbacks).where(held).values(**values))
        return CallbackState(status=outcome, attempts=claim.attempts + 1, last_status=status)
