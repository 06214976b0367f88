"""The tracker's record book: every job's record, written through to the JobStore before anyone can observe
it, the per-key count of running jobs its caps are checked against, and the retention sweep."""

import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from deployments.config import JobsConfig
from deployments.errors import StorageError
from deployments.jobs._store import JobStore
from deployments.jobs.records import Job, JobRequest, JobStatus
from deployments.storage.spool import REDACTED_SUFFIX, redacted_audio_path, remove_spooled
from deployments.types import PipelineResult

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

Clock = Callable[[], datetime]

PROGRESS_SAVE_INTERVAL_S = 0.5
"""A running job's progress is stored at most this often: polls read it from the store (deployments/jobs/reader.py)."""
PROGRESS_SAVE_STEP = 0.1
"""...or sooner, when it moved this much (at most about ten more writes a job)."""


class JobBook:
    """`on_change` is called when records leave the book (for the tracker's gauge)."""

    def __init__(
        self,
        config: JobsConfig,
        store: JobStore,
        clock: Clock,
        on_change: Callable[[], None],
        recordings_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.recordings_dir = recordings_dir  # where finished diarized jobs' recordings are kept (None: not kept)
        self.store = store
        self.clock = clock
        self.on_change = on_change
        self.jobs: dict[str, Job] = {job.job_id: _started_over(job) for job in store.load_all()}
        self.running_per_owner: Counter[str] = Counter(
            job.owner for job in self.jobs.values() if job.status == JobStatus.in_progress
        )
        self.unsaved: dict[str, Job] = {}  # finished jobs whose record the storage refused so far
        self.progress_saved_at: dict[str, float] = {}  # running job -> when its progress was last stored
        self.progress_saved: dict[str, float] = {}  # running job -> the progress last stored

    def unfinished(self) -> list[str]:
        """The jobs still `in_progress` (after a restart: to run again), oldest first."""
        jobs = sorted(self.jobs.values(), key=lambda job: job.created_at)
        return [job.job_id for job in jobs if job.status == JobStatus.in_progress]

    def has_room(self, owner: str, max_running: int | None = None) -> bool:
        return self.running_per_owner[owner] < (max_running or self.config.max_running_jobs_per_key)

    def create(self, owner: str, request: JobRequest, job_id: str | None = None) -> Job:
        """A new running job, stored first: raises StorageError when the record cannot be written."""
        job = Job(job_id=job_id or str(uuid.uuid4()), owner=owner, created_at=self.clock(), request=request)
        self.store.save(job)
        self.jobs[job.job_id] = job
        self.running_per_owner[owner] += 1
        return job

    def find(self, job_id: str) -> Job | None:
        """The job's record as it is, whoever owns it (for the runner)."""
        return self.jobs.get(job_id)

    def get(self, job_id: str, owner: str) -> Job | None:
        """The job if it exists, is not expired, and belongs to `owner`; None otherwise."""
        job = self.jobs.get(job_id)
        if job is None or job.owner != owner:
            return None
        if self._expired(job):
            self._forget([job])
            return None
        return job

    def set_progress(self, job_id: str, share: float) -> None:
        """Stored for polls at most every PROGRESS_SAVE_INTERVAL_S, or when it moved by PROGRESS_SAVE_STEP since
        last stored (a batch's chunks finish in a burst: its last share must not wait for a next update that may
        only come at the end); a write the storage refuses is skipped (the next one carries it). After a restart
        a job starts over, and so does its progress."""
        job = self.jobs.get(job_id)
        if job is None or job.status != JobStatus.in_progress:
            return
        job = self.jobs[job_id] = job.model_copy(update={"progress": round(share, 4)})
        now = time.monotonic()
        recent = now - self.progress_saved_at.get(job_id, float("-inf")) < PROGRESS_SAVE_INTERVAL_S
        if recent and share - self.progress_saved.get(job_id, 0.0) < PROGRESS_SAVE_STEP:
            return
        self.progress_saved_at[job_id] = now
        self.progress_saved[job_id] = share
        try:
            self.store.save(job)
        except StorageError as error:
            logger.debug("job %s: progress not stored (%s)", job_id, error)

    def finish(self, job: Job, transcript: PipelineResult | None = None, error: str | None = None) -> None:
        """The job's outcome, visible at once; written to the store now, or as soon as the storage takes it
        (until then the spooled input is kept, so a restart can still run the job again)."""
        finished = job.model_copy(
            update={
                "status": JobStatus.error if error else JobStatus.complete,
                "completed_at": self.clock(),
                "progress": 1.0,
                "transcript": transcript,
                "error": error,
                "audio_seconds": transcript.billed_seconds if transcript is not None else None,
            }
        )
        self.jobs[job.job_id] = finished
        self.running_per_owner[job.owner] -= 1
        self.progress_saved_at.pop(job.job_id, None)
        self.progress_saved.pop(job.job_id, None)
        self._save_finished(finished)

    def save_unsaved(self) -> None:
        """Try again to write the outcomes the storage refused."""
        for job in list(self.unsaved.values()):
            self._save_finished(job)

    def _save_finished(self, job: Job) -> None:
        try:
            self.store.save(job)
        except StorageError as error:
            logger.warning("job %s: its outcome waits for the storage (%s)", job.job_id, error)
            self.unsaved[job.job_id] = job
            return
        self.unsaved.pop(job.job_id, None)
        if self.recordings_dir is not None and self.config.keep_diarized_recordings and keeps_recording(job):
            keep_recording(job, self.recordings_dir)
        if self.recordings_dir is not None and job.status == JobStatus.complete:
            keep_redacted_audio(job, self.recordings_dir)
        remove_spooled(job.request.source_path)

    def counts(self) -> Counter[str]:
        """Jobs by status value."""
        return Counter(job.status.value for job in self.jobs.values())

    # ---- retention ----

    def sweep(self) -> int:
        """Delete finished jobs older than the retention period; returns how many."""
        expired = [job for job in self.jobs.values() if self._expired(job)]
        self._forget(expired)
        return len(expired)

    def _expired(self, job: Job) -> bool:
        done = job.completed_at
        return done is not None and (self.clock() - done).total_seconds() >= self.config.retention_s

    def forget(self, job: Job) -> None:
        """Delete a finished job before it expires (its owner asked)."""
        self._forget([job])

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
            if self.recordings_dir is not None:
                recording_path(self.recordings_dir, job.job_id).unlink(missing_ok=True)
                for redacted in self.recordings_dir.glob(f"{job.job_id}{REDACTED_SUFFIX}.*"):
                    redacted.unlink(missing_ok=True)
        self.on_change()


def keeps_recording(job: Job) -> bool:
    """A finished diarized job keeps its recording as long as the job is kept, so that one of its speakers can
    be enrolled as a voice from it (`POST /v1/voices` with `job_id`), unless it asked for redaction; every other
    input goes when the job ends."""
    redacting = job.request.options.redaction is not None  # its audio holds what its transcript hides
    return job.status == JobStatus.complete and job.request.diarization is not None and not redacting


def recording_path(recordings_dir: Path, job_id: str) -> Path:
    return recordings_dir / job_id


def keep_recording(job: Job, recordings_dir: Path) -> None:
    """Move the job's spooled input to the kept recordings (the same filesystem: both are under `state_dir`)."""
    try:
        recordings_dir.mkdir(parents=True, exist_ok=True)
        os.replace(job.request.source_path, recording_path(recordings_dir, job.job_id))
    except OSError as error:  # the job is done all the same; only enrolling from it will not work
        logger.warning("job %s: its recording is not kept (%s)", job.job_id, error)


def redacted_audio_of(recordings_dir: Path, job: Job) -> Path | None:
    """Where a finished job's redacted audio is kept, if it asked for one (`redaction.audio`)."""
    redaction = job.request.options.redaction
    if redaction is None or redaction.audio is None:
        return None
    return recordings_dir / f"{job.job_id}{REDACTED_SUFFIX}.{redaction.audio}"


def keep_redacted_audio(job: Job, recordings_dir: Path) -> None:
    """Move the redacted audio the run wrote beside the input to the kept recordings, as long as the job."""
    kept = redacted_audio_of(recordings_dir, job)
    if kept is None:
        return
    written = redacted_audio_path(job.request.source_path, kept.suffix.lstrip("."))
    if not written.exists():
        return
    try:
        recordings_dir.mkdir(parents=True, exist_ok=True)
        os.replace(written, kept)
    except OSError as error:
        logger.warning("job %s: its redacted audio is not kept (%s)", job.job_id, error)


def _started_over(job: Job) -> Job:
    """A job loaded at start: one still running runs again from the start, and so its progress does."""
    return job.model_copy(update={"progress": 0.0}) if job.status == JobStatus.in_progress else job
