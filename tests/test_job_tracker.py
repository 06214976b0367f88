"""The JobTracker's rules, without Ray: a fake pipeline, a real SQLite store, an injected clock."""

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from deployments.job_store import SQLiteJobStore
from deployments.job_tracker import JobTracker, TooManyJobsError
from deployments.jobs import JobRequest, JobStatus
from deployments.types import Segment, Transcript, TranscriptionOptions
from serve_app.config import JobsConfig
from serve_app.pipeline import AudioRejectedError

TRANSCRIPT = Transcript(
    language="en",
    duration=2.5,
    segments=[
        Segment(id=0, seek=0, start=0.0, end=2.5, text=" Hello there.", tokens=[1], temperature=0.0,
                avg_logprob=-0.1, compression_ratio=1.0, no_speech_prob=0.0)
    ],
)  # fmt: skip


class FakePipeline:
    """Transcribes instantly, or waits for `gate`; sources named *bad* are rejected like undecodable audio."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.calls = 0

    async def run(self, source: str, options: TranscriptionOptions, diarization=None, on_progress=None) -> Transcript:
        self.calls += 1
        if on_progress is not None:
            on_progress(0.5)  # half the chunks done
        if self.gate is not None:
            await self.gate.wait()
        if "bad" in source:
            raise AudioRejectedError("audio processing failed: the file is not a readable audio or video container")
        return TRANSCRIPT.model_copy()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _request(tmp_path: Path, name: str = "clip.wav", response_format: str = "json") -> JobRequest:
    source = tmp_path / name
    source.write_bytes(b"audio")
    return JobRequest(
        source_path=str(source), options=TranscriptionOptions(), response_format=response_format, include_words=False
    )


async def _until_finished(tracker: JobTracker, job_id: str, owner: str = "alice"):
    for _ in range(500):
        job = await tracker.get(job_id, owner)
        if job.status != JobStatus.in_progress:
            return job
        await asyncio.sleep(0.01)
    raise AssertionError("job never finished")


def _tracker(tmp_path: Path, pipeline=None, clock=None, **config) -> JobTracker:
    return JobTracker(
        JobsConfig(state_dir=str(tmp_path), **config),
        pipeline or FakePipeline(),
        store=SQLiteJobStore(tmp_path / "jobs.sqlite3"),
        clock=clock or Clock(),
    )


def test_completed_job_has_result_in_its_format_and_is_charged_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        request = _request(tmp_path, response_format="srt")
        job = await tracker.submit("alice", request)
        done = await _until_finished(tracker, job.job_id)
        assert done.status == JobStatus.complete and done.progress == 1.0
        assert done.result.startswith("1\n00:00:00,000 --> 00:00:02,500\nHello there.")
        assert done.completed_at is not None and done.error is None
        assert not Path(request.source_path).exists()  # spool file deleted when the job ends
        assert await tracker.usage("alice") == 2.5

    asyncio.run(scenario())


def test_failed_job_reports_why_and_is_not_charged(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        request = _request(tmp_path, name="bad.mp3")
        done = await _until_finished(tracker, (await tracker.submit("alice", request)).job_id)
        assert done.status == JobStatus.error
        assert done.error.startswith("audio processing failed")
        assert done.result is None
        assert not Path(request.source_path).exists()
        assert await tracker.usage("alice") == 0.0

    asyncio.run(scenario())


def test_a_key_sees_only_its_own_jobs(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        job = await tracker.submit("alice", _request(tmp_path))
        assert await tracker.get(job.job_id, "mallory") is None
        assert await tracker.get("no-such-job", "alice") is None
        assert await tracker.get(job.job_id, "alice") is not None

    asyncio.run(scenario())


def test_results_are_deleted_after_the_retention_period(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        tracker = _tracker(tmp_path, clock=clock, retention_s=12 * 3600)
        good = await _until_finished(tracker, (await tracker.submit("alice", _request(tmp_path))).job_id)
        bad = await _until_finished(tracker, (await tracker.submit("alice", _request(tmp_path, "bad.wav"))).job_id)
        clock.now += timedelta(hours=11, minutes=59)
        assert await tracker.get(good.job_id, "alice") is not None
        assert await tracker.sweep() == 0
        clock.now += timedelta(minutes=1)
        assert await tracker.get(good.job_id, "alice") is None  # a poll after 12 h: gone
        assert await tracker.sweep() == 1  # the error job too, by the periodic sweep
        assert await tracker.get(bad.job_id, "alice") is None
        assert SQLiteJobStore(tmp_path / "jobs.sqlite3").load_all() == []  # deleted permanently

    asyncio.run(scenario())


def test_per_key_cap_on_running_jobs(tmp_path: Path) -> None:
    async def scenario() -> None:
        pipeline = FakePipeline()
        pipeline.gate = asyncio.Event()
        tracker = _tracker(tmp_path, pipeline=pipeline, max_running_jobs_per_key=2)
        jobs = [await tracker.submit("alice", _request(tmp_path, f"{n}.wav")) for n in range(2)]
        with pytest.raises(TooManyJobsError):
            await tracker.submit("alice", _request(tmp_path))
        await tracker.submit("bob", _request(tmp_path))  # the cap is per key
        pipeline.gate.set()
        for job in jobs:
            await _until_finished(tracker, job.job_id)
        await tracker.submit("alice", _request(tmp_path))  # room again once jobs finish

    asyncio.run(scenario())


def test_a_new_tracker_resumes_unfinished_jobs_from_the_store(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        stuck = FakePipeline()
        stuck.gate = asyncio.Event()  # never set: the first tracker "dies" mid-job
        first = _tracker(tmp_path, pipeline=stuck)
        ids = [(await first.submit("alice", _request(tmp_path, f"{n}.wav"))).job_id for n in range(3)]
        await asyncio.sleep(0.05)
        for task in first._tasks:
            task.cancel()
        second = _tracker(tmp_path)
        return [(await _until_finished(second, job_id)).status for job_id in ids]

    assert asyncio.run(scenario()) == [JobStatus.complete] * 3


def test_progress_is_reported_while_running_and_is_1_at_the_end(tmp_path: Path) -> None:
    async def scenario() -> None:
        pipeline = FakePipeline()
        pipeline.gate = asyncio.Event()
        tracker = _tracker(tmp_path, pipeline=pipeline)
        job = await tracker.submit("alice", _request(tmp_path))
        for _ in range(100):
            await asyncio.sleep(0.01)
            if (await tracker.get(job.job_id, "alice")).progress:
                break
        running = await tracker.get(job.job_id, "alice")
        assert running.status == JobStatus.in_progress and running.progress == 0.5
        pipeline.gate.set()
        finished = await _until_finished(tracker, job.job_id)
        assert finished.status == JobStatus.complete and finished.progress == 1.0

    asyncio.run(scenario())
