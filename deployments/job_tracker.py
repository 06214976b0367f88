"""JobTracker: owns asynchronous jobs, their queue and their durable state.

It runs as a named, detached Ray actor (one per cluster, found with `get_if_exists`, restarted by Ray
when it dies). Every change is written through to the JobStore before anyone can observe it; on start
the tracker reloads all jobs and re-queues those still `in_progress`, whose input is still spooled on
disk. So neither an actor restart nor a restart of the whole application loses a job.
"""

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import ray

from deployments.job_store import JobStore, SQLiteJobStore
from deployments.jobs import Job, JobRequest, JobStatus
from serve_app.config import JobsConfig
from serve_app.formatting import render_body
from serve_app.pipeline import AudioRejectedError, TranscriptionPipeline, original_message
from serve_app.schemas import ResponseFormat
from serve_app.url_fetch import UrlRejectedError

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class TooManyJobsError(RuntimeError):
    """The key already has its maximum of running jobs."""


class JobTracker:
    def __init__(
        self,
        config: JobsConfig,
        pipeline: TranscriptionPipeline,
        store: JobStore | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.store = store or SQLiteJobStore(Path(config.state_dir).expanduser() / "jobs.sqlite3")
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
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._work()) for _ in range(config.max_concurrent_jobs)]
        self._tasks.append(loop.create_task(self._sweep_forever()))

    # ---- called by the ingress ----

    async def submit(
        self, owner: str, request: JobRequest, job_id: str | None = None, max_running: int | None = None
    ) -> Job:
        """Record a job and queue it. Raises TooManyJobsError at the per-key cap."""
        if not await self.has_room(owner, max_running):
            raise TooManyJobsError(max_running or self.config.max_running_jobs_per_key)
        job = Job(job_id=job_id or str(uuid.uuid4()), owner=owner, created_at=self.clock(), request=request)
        self.store.save(job)
        self.jobs[job.job_id] = job
        self.running_per_owner[owner] += 1
        self.queue.put_nowait(job.job_id)
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

    async def usage(self, owner: str) -> float:
        """Audio seconds charged to the owner: completed jobs and synchronous requests (failures are free)."""
        return self.store.usage(owner)

    async def charge(self, owner: str, audio_seconds: float) -> None:
        """Charge a completed synchronous request (jobs are charged as they complete)."""
        self.store.charge(owner, audio_seconds)

    async def sweep(self) -> int:
        """Delete finished jobs older than the retention period; returns how many."""
        expired = [job for job in self.jobs.values() if self._expired(job)]
        self._forget(expired)
        return len(expired)

    # ---- the queue ----

    async def _work(self) -> None:
        while True:
            job = self.jobs.get(await self.queue.get())
            if job is not None and job.status == JobStatus.in_progress:
                await self._run(job)

    async def _run(self, job: Job) -> None:
        request = job.request
        try:
            if request.url is not None:
                await self.pipeline.fetch(request.url, Path(request.source_path), self.config.max_upload_bytes)
            transcript = await self.pipeline.run(
                request.source_path,
                request.options,
                request.diarization,
                on_progress=lambda share: self._progress(job.job_id, share),
            )
            result = render_body(transcript, ResponseFormat(request.response_format), request.include_words)
        except (AudioRejectedError, UrlRejectedError) as error:
            self._finish(job, error=str(error))
        except Exception as error:  # a model or system failure: the job ends with the reason, never hangs
            logger.exception("job %s failed", job.job_id)
            self._finish(job, error=f"transcription failed: {original_message(error)}")
        else:
            self._finish(job, result=result, audio_seconds=transcript.duration)

    def _progress(self, job_id: str, share: float) -> None:
        """Kept in memory only: after a restart a job starts over, and so does its progress."""
        job = self.jobs.get(job_id)
        if job is not None and job.status == JobStatus.in_progress:
            self.jobs[job_id] = job.model_copy(update={"progress": round(share, 4)})

    def _finish(
        self, job: Job, result: dict | str | None = None, error: str | None = None, audio_seconds: float = 0.0
    ) -> None:
        finished = job.model_copy(
            update={
                "status": JobStatus.error if error else JobStatus.complete,
                "completed_at": self.clock(),
                "progress": 1.0,
                "result": result,
                "error": error,
                "audio_seconds": audio_seconds or None,
            }
        )
        self.store.save(finished, charge_seconds=audio_seconds)
        self.jobs[job.job_id] = finished
        self.running_per_owner[job.owner] -= 1
        Path(job.request.source_path).unlink(missing_ok=True)

    # ---- retention ----

    def _expired(self, job: Job) -> bool:
        done = job.completed_at
        return done is not None and (self.clock() - done).total_seconds() >= self.config.retention_s

    def _forget(self, jobs: list[Job]) -> None:
        if jobs:
            self.store.delete([job.job_id for job in jobs])
            for job in jobs:
                self.jobs.pop(job.job_id, None)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.sweep_interval_s)
            await self.sweep()


def get_or_create_tracker(config: JobsConfig, pipeline: TranscriptionPipeline) -> ray.actor.ActorHandle:
    """The cluster's one tracker actor: created by the first ingress replica, found by the others."""
    return (
        ray.remote(JobTracker)
        .options(
            name=config.tracker_name,
            namespace=config.tracker_namespace,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            num_cpus=0,
        )
        .remote(config, pipeline)
    )
