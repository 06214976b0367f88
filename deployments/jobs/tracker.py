"""JobTracker: schedules asynchronous jobs and keeps their durable state. It hosts no audio.

It keeps each job's record (in the database: SQLite or PostgreSQL), the queue, per-key caps, retention and
progress; it starts each job by calling the TranscriptionPipeline deployment by handle, with the spooled
file's path, and stores the domain result it gets back. The HTTP layer reads that from the store and renders
it in the job's format when the job is polled; charges go to the UsageLedger, keyed by job id.

It runs as a named, detached Ray actor (one per cluster, found with `get_if_exists`, restarted by Ray
when it dies). Every change is written through to the JobStore before anyone can observe it; on start
the tracker reloads all jobs and re-queues those still `in_progress`, whose input is still spooled on
disk. So neither an actor restart nor a restart of the whole application loses a job.

The work is done by three parts: the record book (`_book`: records, store, caps, retention), the queue
runner (`_runner`: workers running jobs on the pipeline) and the watchdog (`_watchdog`: dead workers,
stalls). The tracker is the actor around them, and runs their upkeep.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ray.actor import ActorProxy
from ray.serve.handle import DeploymentHandle

from deployments.config import JobsConfig, StorageConfig
from deployments.jobs._book import JobBook
from deployments.jobs._runner import QueueRunner
from deployments.jobs._store import JobStore, SQLJobStore
from deployments.jobs._watchdog import Watchdog
from deployments.jobs.records import Job, JobRequest, JobStatus
from deployments.metrics import JobMetrics
from deployments.storage.actors import get_or_create

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class TooManyJobsError(RuntimeError):
    """The key already has its maximum of running jobs."""


class JobRunningError(RuntimeError):
    """The job has not ended: it cannot be deleted yet."""


class JobTracker:
    """`pipeline` is the TranscriptionPipeline deployment's handle, `ledger` the UsageLedger actor's (in tests,
    anything with the same calls)."""

    def __init__(
        self,
        config: JobsConfig,
        storage: StorageConfig,
        pipeline: DeploymentHandle[Any],
        ledger: ActorProxy[Any],
        store: JobStore | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.config = config
        self.metrics = JobMetrics()
        self.book = JobBook(
            config,
            store or SQLJobStore(storage),
            clock,
            self._publish_counts,
            recordings_dir=storage.recordings_dir,
        )
        self.runner = QueueRunner(config, pipeline, ledger, self.book, self.metrics, self._publish_counts)
        self.watchdog = Watchdog(self.runner)
        unfinished = self.book.unfinished()
        for job_id in unfinished:
            self.runner.enqueue(job_id)
        if unfinished:
            logger.info("re-queued %d unfinished jobs", len(unfinished))
        self._publish_counts()
        self.runner.start_workers()
        self._maintenance = asyncio.get_running_loop().create_task(self._maintain_forever())

    @property
    def store(self) -> JobStore:
        return self.book.store

    @property
    def ledger(self) -> ActorProxy[Any]:
        return self.runner.ledger

    async def reconfigure(self, config: JobsConfig, pipeline: DeploymentHandle[Any], ledger: ActorProxy[Any]) -> None:
        """Take the settings and handles of a new deployment. The tracker is detached, so it outlives a
        redeploy; every ingress replica calls this when it starts, so caps, retention and the number of
        concurrent jobs follow the config that is deployed now."""
        self.config = self.book.config = config
        self.runner.reconfigure(config, pipeline, ledger)

    # ---- called by the ingress ----

    async def submit(
        self, owner: str, request: JobRequest, job_id: str | None = None, max_running: int | None = None
    ) -> Job:
        """Record a job and queue it. Raises TooManyJobsError at the per-key cap, and StorageError when the
        record cannot be written (the ingress answers 507 or 503)."""
        if not await self.has_room(owner, max_running):
            raise TooManyJobsError(max_running or self.config.max_running_jobs_per_key)
        job = self.book.create(owner, request, job_id)
        self.runner.enqueue(job.job_id)
        self._publish_counts()
        return job

    async def has_room(self, owner: str, max_running: int | None = None) -> bool:
        """Whether `owner` may start another job now (checked before a long upload; `submit` re-checks)."""
        return self.book.has_room(owner, max_running)

    async def get(self, job_id: str, owner: str) -> Job | None:
        """The job if it exists, is not expired, and belongs to `owner`; None otherwise. (The ingress reads polls
        from the store instead: deployments/jobs/reader.py.)"""
        return self.book.get(job_id, owner)

    async def delete(self, job_id: str, owner: str) -> Job | None:
        """Delete `owner`'s finished job now, before its retention ends (its record and its callback); the job
        as it was, or None when there is no such job. Raises JobRunningError for a job still running."""
        job = self.book.get(job_id, owner)
        if job is None:
            return None
        if job.status == JobStatus.in_progress:
            raise JobRunningError(job_id)
        self.book.forget(job)
        return job

    async def sweep(self) -> int:
        """Delete finished jobs older than the retention period; returns how many."""
        return self.book.sweep()

    # ---- upkeep ----

    def _publish_counts(self) -> None:
        """The `stt_jobs` gauge: jobs by state, counted from the tracker's own records."""
        counts = self.book.counts()
        running = len(self.runner.running)
        states = {
            "queued": counts[JobStatus.in_progress.value] - running,
            "running": running,
            "complete": counts[JobStatus.complete.value],
            "error": counts[JobStatus.error.value],
        }
        for state, count in states.items():
            self.metrics.jobs.set(count, tags={"state": state})

    async def _maintain_forever(self) -> None:
        """Every `retry_interval_s`: replace any worker that died, warn of stalls, write the outcomes the
        storage refused; every `sweep_interval_s`: delete expired jobs. Nothing ends this loop but the actor."""
        next_sweep = time.monotonic() + self.config.sweep_interval_s
        while True:
            await asyncio.sleep(self.config.retry_interval_s)
            try:
                self.watchdog.check()
                self.book.save_unsaved()
                if time.monotonic() >= next_sweep:
                    await self.sweep()
                    next_sweep = time.monotonic() + self.config.sweep_interval_s
            except Exception:
                logger.exception("tracker upkeep failed; trying again in %.0f s", self.config.retry_interval_s)


def get_or_create_tracker(
    config: JobsConfig,
    storage: StorageConfig,
    pipeline: DeploymentHandle[Any],
    ledger: ActorProxy[Any],
) -> ActorProxy[Any]:
    """The cluster's one tracker actor: created by the first ingress replica, found by the others (which
    then hand it their config and handles with `reconfigure`)."""
    return get_or_create(JobTracker, config.tracker_name, storage, config, storage, pipeline, ledger)
