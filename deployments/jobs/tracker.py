"""JobTracker: schedules asynchronous jobs and keeps their durable state. It hosts no audio.

It keeps each job's record (SQLite), the queue, per-key caps, retention and progress; it starts each job
by calling the TranscriptionPipeline deployment by handle, with the spooled file's path, and stores the
domain result it gets back. The HTTP layer renders that in the job's format when the job is polled;
charges go to the UsageLedger, keyed by job id.

It runs as a named, detached Ray actor (one per cluster, found with `get_if_exists`, restarted by Ray
when it dies). Every change is written through to the JobStore before anyone can observe it; on start
the tracker reloads all jobs and re-queues those still `in_progress`, whose input is still spooled on
disk. So neither an actor restart nor a restart of the whole application loses a job.
"""

import asyncio
import io
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from ray.actor import ActorProxy
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from deployments.billing.ledger import ChargeDetails
from deployments.config import JobsConfig
from deployments.errors import StorageError, client_error, original_message, storage_failure
from deployments.jobs._store import JobStore, SQLiteJobStore
from deployments.jobs.records import Job, JobRequest, JobStatus
from deployments.metrics import JobMetrics
from deployments.retry import worker_lost
from deployments.storage.actors import get_or_create
from deployments.storage.spool import remove_spooled
from deployments.types import PipelineProgress, PipelineRequest, PipelineResult

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


MAX_ATTEMPTS = 5
"""A job whose run fails this often for reasons that are neither its input's nor the storage's (a lost
worker, a stopping application, a failing model) ends in error; until then it is run again, waiting
`retry_interval_s`, then twice, four and eight times as long between attempts."""
MAX_RETRY_DELAY_S = 300.0
SILENT_JOB_WARNING_S = 120.0  # far beyond a chunk batch's time; a slower model only makes the log louder
STALL_WARNING_ROUNDS = 10  # upkeep rounds (retry_interval_s each) with jobs queued beside a free worker


class TooManyJobsError(RuntimeError):
    """The key already has its maximum of running jobs."""


class JobTracker:
    """`pipeline` is the TranscriptionPipeline deployment's handle, `ledger` the UsageLedger actor's (in tests,
    anything with the same calls)."""

    def __init__(
        self,
        config: JobsConfig,
        pipeline: DeploymentHandle,
        ledger: ActorProxy[Any],
        store: JobStore | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.ledger = ledger
        self.store = store or SQLiteJobStore(config.database_path)
        self.clock = clock
        self.jobs: dict[str, Job] = {job.job_id: job for job in self.store.load_all()}
        self.running_per_owner: Counter[str] = Counter()
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        for job in sorted(self.jobs.values(), key=lambda job: job.created_at):
            if job.status == JobStatus.in_progress:
                self.running_per_owner[job.owner] += 1
                self.queue.put_nowait(job.job_id)
        if self.queue.qsize():
            logger.info("re-queued %d unfinished jobs", self.queue.qsize())
        self.unsaved: dict[str, Job] = {}  # finished jobs whose record the storage refused so far
        self.failures: Counter[str] = Counter()  # unexpected failures per job, for the retry budget
        self.workers: dict[int, asyncio.Task] = {}
        self.running: dict[str, tuple[int, float]] = {}  # job being run -> its worker, when it last reported
        self.started: set[str] = set()  # unfinished jobs that have run at least once (for the queue-wait metric)
        self.metrics = JobMetrics()
        self.stalled_rounds = 0
        self._publish_counts()
        self._start_workers()
        self._maintenance = asyncio.get_running_loop().create_task(self._maintain_forever())

    async def reconfigure(self, config: JobsConfig, pipeline: DeploymentHandle, ledger: ActorProxy[Any]) -> None:
        """Take the settings and handles of a new deployment. The tracker is detached, so it outlives a
        redeploy; every ingress replica calls this when it starts, so caps, retention and the number of
        concurrent jobs follow the config that is deployed now."""
        self.config, self.pipeline, self.ledger = config, pipeline, ledger
        self._start_workers()

    # ---- called by the ingress ----

    async def submit(
        self, owner: str, request: JobRequest, job_id: str | None = None, max_running: int | None = None
    ) -> Job:
        """Record a job and queue it. Raises TooManyJobsError at the per-key cap, and StorageError when the
        record cannot be written (the ingress answers 507 or 503)."""
        if not await self.has_room(owner, max_running):
            raise TooManyJobsError(max_running or self.config.max_running_jobs_per_key)
        job = Job(job_id=job_id or str(uuid.uuid4()), owner=owner, created_at=self.clock(), request=request)
        self.store.save(job)
        self.jobs[job.job_id] = job
        self.running_per_owner[owner] += 1
        self.queue.put_nowait(job.job_id)
        self._publish_counts()
        return job

    async def has_room(self, owner: str, max_running: int | None = None) -> bool:
        """Whether `owner` may start another job now (checked before a long upload; `submit` re-checks)."""
        return self.running_per_owner[owner] < (max_running or self.config.max_running_jobs_per_key)

    async def get(self, job_id: str, owner: str) -> Job | None:
        """The job if it exists, is not expired, and belongs to `owner`; None otherwise."""
        job = self.jobs.get(job_id)
        if job is None or job.owner != owner:
            return None
        if self._expired(job):
            self._forget([job])
            return None
        return job

    async def sweep(self) -> int:
        """Delete finished jobs older than the retention period; returns how many."""
        expired = [job for job in self.jobs.values() if self._expired(job)]
        self._forget(expired)
        return len(expired)

    # ---- the queue ----

    def _start_workers(self) -> None:
        loop = asyncio.get_running_loop()
        for index in range(self.config.max_concurrent_jobs):
            worker = self.workers.get(index)
            if worker is None or worker.done():
                self.workers[index] = loop.create_task(self._work(index))

    async def _work(self, index: int) -> None:
        """Worker `index` runs jobs one after another while the config still has that many workers. No
        exception ends it: a job's failure is recorded or retried, never the worker's end."""
        while index < self.config.max_concurrent_jobs:
            job_id = await self.queue.get()
            if index >= self.config.max_concurrent_jobs:  # the config shrank while this worker waited
                self.queue.put_nowait(job_id)
                break
            job = self.jobs.get(job_id)
            if job is None or job.status != JobStatus.in_progress:
                continue
            if job_id not in self.started:  # its first run, not a retry
                self.started.add(job_id)
                self.metrics.queue_wait_seconds.observe((self.clock() - job.created_at).total_seconds())
            self.running[job_id] = (index, time.monotonic())
            self._publish_counts()
            try:
                await self._run(job)
            except Exception as error:  # not the input's fault: run it again, within the budget
                self._failed_attempt(job, error)
            finally:
                self.running.pop(job_id, None)
                self._publish_counts()
        self.workers.pop(index, None)

    async def _run(self, job: Job) -> None:
        request = job.request
        pipeline_request = PipelineRequest(
            source_path=request.source_path,
            url=request.url,
            max_bytes=self.config.max_upload_bytes,
            options=request.options,
            diarization=request.diarization,
        )
        result: PipelineResult | None = None
        try:
            events = cast(  # Ray types remote() as a response or a generator; stream=True makes it a generator
                DeploymentResponseGenerator,
                self.pipeline.options(stream=True).transcribe_streaming.remote(pipeline_request),
            )
            async for event in events:
                if isinstance(event, PipelineProgress):
                    self._progress(job.job_id, event.share)
                else:
                    result = event
            if result is None:
                raise RuntimeError("the pipeline ended without a result")
        except Exception as error:
            rejected, storage = client_error(error), storage_failure(error)
            if rejected is not None:
                self._finish(job, error=str(rejected))
            elif storage is not None:  # a full disk is not the job's fault: wait for space
                logger.warning("job %s: storage refused a write (%s); retrying in %.0f s", job.job_id, storage,
                               self._retry_s)  # fmt: skip
                self._retry_later(job.job_id)
            else:  # a lost worker, a stopping application, a model failure: see `_failed_attempt`
                raise
            return
        details = request.charge or ChargeDetails(task="diarize" if request.diarization is not None else "transcribe")
        details = details.completed(result.language, request.source_path)
        await self.ledger.charge.remote(job.job_id, job.owner, result.duration, details)  # once, by job id
        self._finish(job, transcript=result)

    @property
    def _retry_s(self) -> float:
        return self.config.retry_interval_s

    def _retry_later(self, job_id: str, delay_s: float | None = None) -> None:
        asyncio.get_running_loop().call_later(self._retry_s if delay_s is None else delay_s, self.queue.put_nowait,
                                              job_id)  # fmt: skip

    def _failed_attempt(self, job: Job, error: Exception) -> None:
        """A run that failed for a reason that is not about the input: the job stays `in_progress` and runs
        again after a backoff, until MAX_ATTEMPTS. When the whole application stops, its jobs are still
        `in_progress` in the store, and the next start runs them. The client never sees Ray's words (actor
        ids, addresses): the reason goes to the log."""
        attempts = self.failures[job.job_id] = self.failures[job.job_id] + 1
        reason = f"{type(error).__name__}: {original_message(error)}"
        if worker_lost(error):
            self.metrics.retries.inc(tags={"reason": "worker_lost"})
        else:
            self.metrics.retries.inc(tags={"reason": "failure"})
        if attempts >= MAX_ATTEMPTS:
            logger.error("job %s: attempt %d of %d failed; ending it. %s", job.job_id, attempts, MAX_ATTEMPTS, reason)
            self._finish(
                job, error=f"the service could not complete this job in {attempts} attempts; please submit it again"
            )
            return
        delay = min(self._retry_s * 2 ** (attempts - 1), MAX_RETRY_DELAY_S)
        logger.warning("job %s: attempt %d failed, running it again in %.0f s. %s", job.job_id, attempts, delay,
                       reason[:500])  # fmt: skip
        self._retry_later(job.job_id, delay)

    def _progress(self, job_id: str, share: float) -> None:
        """Kept in memory only: after a restart a job starts over, and so does its progress."""
        job = self.jobs.get(job_id)
        if job_id in self.running:
            self.running[job_id] = (self.running[job_id][0], time.monotonic())
        if job is not None and job.status == JobStatus.in_progress:
            self.jobs[job_id] = job.model_copy(update={"progress": round(share, 4)})

    def _finish(self, job: Job, transcript: PipelineResult | None = None, error: str | None = None) -> None:
        """The job's outcome, visible at once; written to the store now, or as soon as the storage takes it
        (until then the spooled input is kept, so a restart can still run the job again)."""
        finished = job.model_copy(
            update={
                "status": JobStatus.error if error else JobStatus.complete,
                "completed_at": self.clock(),
                "progress": 1.0,
                "transcript": transcript,
                "error": error,
                "audio_seconds": transcript.duration if transcript is not None else None,
            }
        )
        self.jobs[job.job_id] = finished
        self.running_per_owner[job.owner] -= 1
        self.failures.pop(job.job_id, None)
        self.started.discard(job.job_id)
        self._save_finished(finished)

    def _save_finished(self, job: Job) -> None:
        try:
            self.store.save(job)
        except StorageError as error:
            logger.warning("job %s: its outcome waits for the storage (%s)", job.job_id, error)
            self.unsaved[job.job_id] = job
            return
        self.unsaved.pop(job.job_id, None)
        remove_spooled(job.request.source_path)

    # ---- retention ----

    def _expired(self, job: Job) -> bool:
        done = job.completed_at
        return done is not None and (self.clock() - done).total_seconds() >= self.config.retention_s

    def _forget(self, jobs: list[Job]) -> None:
        if not jobs:
            return
        try:
            self.store.delete([job.job_id for job in jobs])
        except StorageError as error:  # forgotten here; the store's copies expire again at the next start
            logger.warning("could not delete %d expired jobs from the store: %s", len(jobs), error)
        for job in jobs:
            self.jobs.pop(job.job_id, None)
            self.unsaved.pop(job.job_id, None)
        self._publish_counts()

    def _warn_if_stalled(self) -> None:
        """Queued jobs beside a free worker should never outlast a few upkeep rounds, nor a running job go
        `SILENT_JOB_WARNING_S` without progress: if they do, say what the workers are doing (a stuck call
        would otherwise hold jobs `in_progress` without a word)."""
        now = time.monotonic()
        for job_id, (index, heard) in list(self.running.items()):
            if now - heard >= SILENT_JOB_WARNING_S and index in self.workers:
                logger.warning("job %s: no progress for %.0f s; worker %d:\n%s", job_id, now - heard, index,
                               _task_stack(self.workers[index]))  # fmt: skip
                self.running[job_id] = (index, now)  # again after as long, not every round
        if not self.queue.qsize() or len(self.running) >= self.config.max_concurrent_jobs:
            self.stalled_rounds = 0
            return
        self.stalled_rounds += 1
        if self.stalled_rounds == STALL_WARNING_ROUNDS:
            stacks = "".join(f"\nworker {index}:\n{_task_stack(worker)}" for index, worker in self.workers.items())
            logger.warning("%d jobs queued, %d running, %d workers for %d rounds:%s", self.queue.qsize(),
                           len(self.running), len(self.workers), self.stalled_rounds, stacks)  # fmt: skip

    def _publish_counts(self) -> None:
        """The `stt_jobs` gauge: jobs by state, counted from the tracker's own records."""
        counts = Counter(job.status.value for job in self.jobs.values())
        running = len(self.running)
        states = {
            "queued": counts[JobStatus.in_progress.value] - running,
            "running": running,
            "complete": counts[JobStatus.complete.value],
            "error": counts[JobStatus.error.value],
        }
        for state, count in states.items():
            self.metrics.jobs.set(count, tags={"state": state})

    # ---- upkeep ----

    async def _maintain_forever(self) -> None:
        """Every `retry_interval_s`: replace any worker that died, write the outcomes the storage refused;
        every `sweep_interval_s`: delete expired jobs. Nothing ends this loop but the actor."""
        next_sweep = time.monotonic() + self.config.sweep_interval_s
        while True:
            await asyncio.sleep(self._retry_s)
            try:
                self._start_workers()
                self._warn_if_stalled()
                for job in list(self.unsaved.values()):
                    self._save_finished(job)
                if time.monotonic() >= next_sweep:
                    await self.sweep()
                    next_sweep = time.monotonic() + self.config.sweep_interval_s
            except Exception:
                logger.exception("tracker upkeep failed; trying again in %.0f s", self._retry_s)


def _task_stack(task: asyncio.Task) -> str:
    frames = io.StringIO()
    task.print_stack(limit=8, file=frames)
    return frames.getvalue()


def get_or_create_tracker(config: JobsConfig, pipeline: DeploymentHandle, ledger: ActorProxy[Any]) -> ActorProxy[Any]:
    """The cluster's one tracker actor: created by the first ingress replica, found by the others (which
    then hand it their config and handles with `reconfigure`)."""
    return get_or_create(JobTracker, config.tracker_name, config.tracker_namespace, config, pipeline, ledger)
