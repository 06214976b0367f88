"""The tracker's watchdog, run every upkeep round: it replaces workers that died, and says what the workers
are doing when queued jobs wait beside a free worker or a running job goes silent (a stuck call would
otherwise hold jobs `in_progress` without a word)."""

import asyncio
import io
import logging
import time

from deployments.jobs._runner import QueueRunner

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

SILENT_JOB_WARNING_S = 120.0  # far beyond a chunk batch's time; a slower model only makes the log louder
STALL_WARNING_ROUNDS = 10  # upkeep rounds (retry_interval_s each) with jobs queued beside a free worker


class Watchdog:
    def __init__(self, runner: QueueRunner) -> None:
        self.runner = runner
        self.stalled_rounds = 0

    def check(self) -> None:
        """One upkeep round: workers alive, then warnings if the queue stalls."""
        self.runner.start_workers()
        self.warn_if_stalled()

    def warn_if_stalled(self) -> None:
        """Queued jobs beside a free worker should never outlast a few upkeep rounds, nor a running job go
        `SILENT_JOB_WARNING_S` without progress: if they do, log the workers' stacks."""
        runner = self.runner
        now = time.monotonic()
        for job_id, (index, heard) in list(runner.running.items()):
            if now - heard >= SILENT_JOB_WARNING_S and index in runner.workers:
                logger.warning("job %s: no progress for %.0f s; worker %d:\n%s", job_id, now - heard, index,
                               _task_stack(runner.workers[index]))  # fmt: skip
                runner.running[job_id] = (index, now)  # again after as long, not every round
        if not runner.queue.qsize() or len(runner.running) >= runner.config.max_concurrent_jobs:
            self.stalled_rounds = 0
            return
        self.stalled_rounds += 1
        if self.stalled_rounds == STALL_WARNING_ROUNDS:
            stacks = "".join(f"\nworker {index}:\n{_task_stack(worker)}" for index, worker in runner.workers.items())
            logger.warning("%d jobs queued, %d running, %d workers for %d rounds:%s", runner.queue.qsize(),
                           len(runner.running), len(runner.workers), self.stalled_rounds, stacks)  # fmt: skip


def _task_stack(task: asyncio.Task[None]) -> str:
    frames = io.StringIO()
    task.print_stack(limit=8, file=frames)
    return frames.getvalue()
