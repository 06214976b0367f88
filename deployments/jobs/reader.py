"""Polls read jobs from the store, not from the tracker: each ingress replica opens the database for reading,
so poll capacity grows with the ingress replicas instead of queueing behind the one tracker actor, and a
finished job's poll is answered while the tracker is down or restarting. The tracker still owns every write
(records, progress, outcomes, retention) and the scheduling.

What a poll sees is what the tracker has stored: its progress at most `PROGRESS_SAVE_INTERVAL_S` behind
(deployments/jobs/_book.py); an outcome the storage refused (a full disk) once the storage takes it; and a
job past its retention period is gone, as the tracker's sweep will make it.
"""

from collections.abc import Callable
from datetime import UTC, datetime

from deployments.callbacks.store import CallbackOutbox, CallbackState
from deployments.config import CallbacksConfig, JobsConfig, StorageConfig
from deployments.jobs._store import SQLJobStore
from deployments.jobs.records import Job
from deployments.storage.database import database_storage


def utc_now() -> datetime:
    return datetime.now(UTC)


class JobReader:
    """Read-only access to job records, for the ingress. Its calls block (a database query): run them off
    the event loop."""

    def __init__(
        self,
        config: JobsConfig,
        storage: StorageConfig,
        clock: Callable[[], datetime] = utc_now,
        callbacks: CallbacksConfig | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.store = SQLJobStore(storage, reading=True)
        self.callbacks = CallbackOutbox(self.store.engine, callbacks or CallbacksConfig(), config.retention_s)
        """The callback outbox, on the same connections: polls read a job's callback, the edge's senders claim
        and record deliveries (serve_app/callbacks/)."""

    def get(self, job_id: str, owner: str) -> Job | None:
        """The job if it exists, is not expired, and belongs to `owner`; None otherwise (as the tracker's `get`)."""
        with database_storage("the job store"):  # a database down: 503, try again
            job = self.store.load(job_id, owner)
        if job is None or job.completed_at is None:
            return job
        if (self.clock() - job.completed_at).total_seconds() >= self.config.retention_s:
            return None
        return job

    def owned(self, owner: str) -> list[Job]:
        """`owner`'s jobs that are not expired, newest first (a listing: each record is read whole, and jobs live
        `retention_s`, so a key's list is as long as the jobs it made in that time)."""
        with database_storage("the job store"):
            owned = self.store.load_owned(owner)
        now = self.clock()
        kept = [job for job in owned if job.completed_at is None
                or (now - job.completed_at).total_seconds() < self.config.retention_s]  # fmt: skip
        return sorted(kept, key=lambda job: job.created_at, reverse=True)

    def callback(self, job: Job) -> CallbackState | None:
        """The callback of a job submitted with a `callback_url` (pending until its end is stored); None for a
        job without one."""
        if job.request.callback_url is None:
            return None
        with database_storage("the job store"):
            return self.callbacks.state(job.job_id) or CallbackState()
