"""The tracker's queue runner: `max_concurrent_jobs` workers take queued jobs one after another, run each on
the TranscriptionPipeline deployment's handle, note its progress, charge it once and record its outcome in
the book; a run that fails for a reason not about its input is run again after a backoff."""

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from ray.actor import ActorProxy
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from deployments.analysis.errors import analysis_error_message, analysis_failure
from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import charge
from deployments.config import JobsConfig
from deployments.errors import client_error, original_message, storage_failure
from deployments.jobs._book import JobBook
from deployments.jobs.records import Job, JobStatus
from deployments.metrics import JobMetrics
from deployments.retry import worker_lost
from deployments.types import PipelineProgress, PipelineRequest, PipelineResult

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

MAX_ATTEMPTS = 5
"""A job whose run fails this often for reasons that are neither its input's nor the storage's (a lost
worker, a stopping application, a failing model) ends in error; until then it is run again, waiting
`retry_interval_s`, then twice, four and eight times as long between attempts."""
MAX_RETRY_DELAY_S = 300.0


class QueueRunner:
    """`pipeline` is the TranscriptionPipeline deployment's handle, `ledger` the UsageLedger actor's. `on_change`
    is called when a job starts or stops running (for the tracker's gauge)."""

    def __init__(
        self,
        config: JobsConfig,
        pipeline: DeploymentHandle[Any],
        ledger: ActorProxy[Any],
        book: JobBook,
        metrics: JobMetrics,
        on_change: Callable[[], None],
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.ledger = ledger
        self.book = book
        self.metrics = metrics
        self.on_change = on_change
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.workers: dict[int, asyncio.Task[None]] = {}
        self.running: dict[str, tuple[int, float]] = {}  # job being run -> its worker, when it last reported
        self.started: set[str] = set()  # unfinished jobs that have run at least once (for the queue-wait metric)
        self.failures: Counter[str] = Counter()  # unexpected failures per job, for the retry budget

    def reconfigure(self, config: JobsConfig, pipeline: DeploymentHandle[Any], ledger: ActorProxy[Any]) -> None:
        self.config, self.pipeline, self.ledger = config, pipeline, ledger
        self.start_workers()

    def enqueue(self, job_id: str) -> None:
        self.queue.put_nowait(job_id)

    def start_workers(self) -> None:
        """Start the workers the config asks for that are not running (never started, or died)."""
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
            job = self.book.find(job_id)
            if job is None or job.status != JobStatus.in_progress:
                continue
            if job_id not in self.started:  # its first run, not a retry
                self.started.add(job_id)
                self.metrics.queue_wait_seconds.observe((self.book.clock() - job.created_at).total_seconds())
            self.running[job_id] = (index, time.monotonic())
            self.on_change()
            try:
                await self._run(job)
            except Exception as error:  # not the input's fault: run it again, within the budget
                self._failed_attempt(job, error)
            finally:
                self.running.pop(job_id, None)
                self.on_change()
        self.workers.pop(index, None)

    async def _run(self, job: Job) -> None:
        request = job.request
        pipeline_request = PipelineRequest(
            source_path=request.source_path,
            url=request.url,
            max_bytes=self.config.max_job_upload_bytes,
            options=request.options,
            diarization=request.diarization,
            analysis=request.analysis,
        )
        result: PipelineResult | None = None
        try:
            events = cast(
                DeploymentResponseGenerator[Any],
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
            rejected, storage, analysis = client_error(error), storage_failure(error), analysis_failure(error)
            if rejected is not None:
                self._finish(job, error=str(rejected))
            elif analysis is not None:  # the LLM failed or ran out of time: the job ends unbilled, as nexara's do
                self._finish(job, error=analysis_error_message(analysis))
            elif storage is not None:  # a full disk is not the job's fault: wait for space
                logger.warning("job %s: storage refused a write (%s); retrying in %.0f s", job.job_id, storage,
                               self._retry_s)  # fmt: skip
                self._retry_later(job.job_id)
            else:  # a lost worker, a stopping application, a model failure: see `_failed_attempt`
                raise
            return
        details = request.charge or ChargeDetails(task="diarize" if request.diarization is not None else "transcribe")
        details = details.completed(result.language, request.source_path).analyzed(result.analysis)
        await charge(self.ledger, job.job_id, job.owner, result.billed_seconds, details)  # once, by job id
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
        if job_id in self.running:
            self.running[job_id] = (self.running[job_id][0], time.monotonic())
        self.book.set_progress(job_id, share)

    def _finish(self, job: Job, transcript: PipelineResult | None = None, error: str | None = None) -> None:
        self.failures.pop(job.job_id, None)
        self.started.discard(job.job_id)
        self.book.finish(job, transcript=transcript, error=error)
