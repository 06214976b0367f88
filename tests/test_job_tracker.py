"""The JobTracker's rules, without Ray: a fake pipeline handle, a real SQLite store and ledger, an injected clock."""

import asyncio
import errno
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ray import exceptions as ray_errors

from deployments.billing.ledger import UsageLedger
from deployments.config import JobsConfig, StorageConfig
from deployments.errors import AudioRejectedError, StorageError
from deployments.jobs._runner import MAX_ATTEMPTS
from deployments.jobs._store import SQLJobStore
from deployments.jobs._watchdog import SILENT_JOB_WARNING_S, STALL_WARNING_ROUNDS
from deployments.jobs.records import JobRequest, JobStatus
from deployments.jobs.tracker import JobTracker, TooManyJobsError
from deployments.redaction import RedactionClass, RedactionOptions
from deployments.storage.spool import decoded_copy_path, redacted_audio_path
from deployments.types import (
    DiarizationOptions,
    PipelineProgress,
    PipelineRequest,
    Segment,
    Transcript,
    TranscriptionOptions,
    Word,
)
from serve_app.rendering.response_formats import RenderSpec, ResponseFormat
from tests.fakes import Actor

TRANSCRIPT = Transcript(
    language="en",
    duration=2.5,
    segments=[
        Segment(id=0, seek=0, start=0.0, end=2.5, text=" Hello there.", tokens=[1], temperature=0.0,
                avg_logprob=-0.1, compression_ratio=1.0, no_speech_prob=0.0)
    ],
    words=[Word(word=" Hello", start=0.0, end=1.0, prob=0.9), Word(word=" there.", start=1.2, end=2.5, prob=0.9)],
)  # fmt: skip


class FakePipeline:
    """A DeploymentHandle's calls (`options(stream=True).transcribe_streaming.remote(request)`): reports half
    done, then transcribes, or waits for `gate` first; sources named *bad* are rejected like undecodable audio."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.calls = 0
        self.transcribe_streaming = self

    def options(self, stream: bool) -> "FakePipeline":
        assert stream
        return self

    async def remote(self, request: PipelineRequest):
        self.calls += 1
        yield PipelineProgress(share=0.5)
        if self.gate is not None:
            await self.gate.wait()
        if "bad" in request.source_path:
            raise AudioRejectedError("audio processing failed: the file is not a readable audio or video container")
        yield TRANSCRIPT.model_copy()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _request(
    tmp_path: Path, name: str = "clip.wav", response_format: ResponseFormat = ResponseFormat.json
) -> JobRequest:
    source = tmp_path / name
    source.write_bytes(b"audio")
    return JobRequest(
        source_path=str(source),
        options=TranscriptionOptions(),
        render=RenderSpec(response_format=response_format).stored(),
    )


async def _until_finished(tracker: JobTracker, job_id: str, owner: str = "alice"):
    for _ in range(500):
        job = await tracker.get(job_id, owner)
        assert job is not None
        if job.status != JobStatus.in_progress:
            return job
        await asyncio.sleep(0.01)
    raise AssertionError("job never finished")


def _tracker(tmp_path: Path, pipeline=None, clock=None, **config) -> JobTracker:
    return JobTracker(
        JobsConfig(**config),
        StorageConfig(state_dir=str(tmp_path)),
        pipeline or FakePipeline(),  # type: ignore[arg-type]  # a fake for the Ray handle
        Actor(UsageLedger(tmp_path / "jobs.sqlite3")),  # type: ignore[arg-type]  # a fake for the Ray handle
        store=SQLJobStore(tmp_path / "jobs.sqlite3"),
        clock=clock or Clock(),
    )


def test_a_decoded_copy_left_by_a_cut_off_run_goes_with_the_jobs_input(tmp_path: Path) -> None:
    """A restart kills a run before its `finally` removes its decoded copy; the job's end removes it."""

    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        request = _request(tmp_path)
        left_behind = decoded_copy_path(request.source_path)
        left_behind.write_bytes(b"samples")
        other_input = tmp_path / "clip.wav2"  # another job's input whose name starts alike stays
        other_input.write_bytes(b"audio")
        job = await tracker.submit("alice", request)
        assert (await _until_finished(tracker, job.job_id)).status == JobStatus.complete
        assert sorted(path.name for path in tmp_path.glob("clip*")) == ["clip.wav2"]

    asyncio.run(scenario())


def test_completed_job_keeps_the_domain_transcript_and_is_charged_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        request = _request(tmp_path, response_format=ResponseFormat.srt)
        job = await tracker.submit("alice", request)
        done = await _until_finished(tracker, job.job_id)
        assert done.status == JobStatus.complete and done.progress == 1.0
        assert done.transcript == TRANSCRIPT  # rendered as srt by the HTTP layer when polled
        assert done.completed_at is not None and done.error is None
        assert not Path(request.source_path).exists()  # spool file deleted when the job ends
        assert await tracker.ledger.usage.remote("alice") == 2.5

    asyncio.run(scenario())


def test_failed_job_reports_why_and_is_not_charged(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        request = _request(tmp_path, name="bad.mp3")
        done = await _until_finished(tracker, (await tracker.submit("alice", request)).job_id)
        assert done.status == JobStatus.error
        assert done.error.startswith("audio processing failed")
        assert done.transcript is None
        assert not Path(request.source_path).exists()
        assert await tracker.ledger.usage.remote("alice") == 0.0

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
        assert SQLJobStore(tmp_path / "jobs.sqlite3").load_all() == []  # deleted permanently

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
        for task in [*first.runner.workers.values(), first._maintenance]:
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
            polled = await tracker.get(job.job_id, "alice")
            assert polled is not None
            if polled.progress:
                break
        running = await tracker.get(job.job_id, "alice")
        assert running is not None
        assert running.status == JobStatus.in_progress and running.progress == 0.5
        pipeline.gate.set()
        finished = await _until_finished(tracker, job.job_id)
        assert finished.status == JobStatus.complete and finished.progress == 1.0

    asyncio.run(scenario())


def test_a_redeployed_config_changes_caps_and_concurrency_of_the_running_tracker(tmp_path: Path) -> None:
    """The tracker is detached and outlives a redeploy; the new Ingress hands it the new config."""

    async def scenario() -> None:
        pipeline = FakePipeline()
        pipeline.gate = asyncio.Event()
        tracker = _tracker(tmp_path, pipeline=pipeline, max_running_jobs_per_key=5, max_concurrent_jobs=1)
        for n in range(3):
            await tracker.submit("alice", _request(tmp_path, f"{n}.wav"))
        await asyncio.sleep(0.05)
        assert pipeline.calls == 1  # one job at a time
        await tracker.reconfigure(
            JobsConfig(max_running_jobs_per_key=3, max_concurrent_jobs=3),
            pipeline,  # type: ignore[arg-type]  # a fake for the Ray handle
            tracker.ledger,
        )
        await asyncio.sleep(0.05)
        assert pipeline.calls == 3  # the other two started at once
        with pytest.raises(TooManyJobsError):
            await tracker.submit("alice", _request(tmp_path))  # the new cap: 3
        pipeline.gate.set()

    asyncio.run(scenario())


def test_a_charge_is_recorded_once_per_id(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "jobs.sqlite3")
    assert ledger.charge("job-1", "alice", 10.0)
    assert not ledger.charge("job-1", "alice", 10.0)  # a retried call, or a job run again after a crash
    assert ledger.charge("request-2", "alice", 2.5)
    assert ledger.usage("alice") == 12.5 and ledger.usage("bob") == 0.0


def test_usage_totals_of_an_earlier_version_move_into_the_ledger(tmp_path: Path) -> None:
    import sqlite3

    old = sqlite3.connect(tmp_path / "jobs.sqlite3")
    old.execute("CREATE TABLE usage (owner TEXT PRIMARY KEY, audio_seconds REAL)")
    old.execute("INSERT INTO usage VALUES ('alice', 42.0)")
    old.commit()
    old.close()
    assert UsageLedger(tmp_path / "jobs.sqlite3").usage("alice") == 42.0
    assert UsageLedger(tmp_path / "jobs.sqlite3").usage("alice") == 42.0  # moved once


def test_a_job_run_again_after_a_crash_between_charge_and_completion_is_billed_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        job = await tracker.submit("alice", _request(tmp_path))
        await _until_finished(tracker, job.job_id)
        # The crash: the charge was recorded, the completion was not; after a restart the job runs again.
        rerun = job.model_copy(update={"job_id": job.job_id})
        tracker.store.save(rerun)
        second = _tracker(tmp_path)
        Path(job.request.source_path).write_bytes(b"audio")
        assert (await _until_finished(second, job.job_id)).status == JobStatus.complete
        assert await second.ledger.usage.remote("alice") == 2.5  # charged once, by job id

    asyncio.run(scenario())


class FlakyStore(SQLJobStore):
    """A real store whose disk can be 'full': every write then fails as SQLite's would."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.full = False

    def save(self, job) -> None:
        if self.full:
            raise StorageError(errno.ENOSPC, "the job store could not be written (database or disk is full)")
        super().save(job)


def test_a_full_disk_while_jobs_finish_keeps_the_queue_alive_and_they_complete_when_space_returns(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        pipeline = FakePipeline()
        pipeline.gate = asyncio.Event()
        store = FlakyStore(tmp_path / "jobs.sqlite3")
        tracker = JobTracker(
            JobsConfig(max_concurrent_jobs=2, retry_interval_s=0.05),
            StorageConfig(state_dir=str(tmp_path)),
            pipeline,  # type: ignore[arg-type]  # a fake for the Ray handle
            Actor(UsageLedger(tmp_path / "jobs.sqlite3")),  # type: ignore[arg-type]  # a fake for the Ray handle
            store=store,
            clock=Clock(),
        )
        requests = [_request(tmp_path, f"{n}.wav") for n in range(2)]
        jobs = [await tracker.submit("alice", request) for request in requests]
        await asyncio.sleep(0.05)
        store.full = True  # the disk fills while both jobs run
        pipeline.gate.set()
        finished = [await _until_finished(tracker, job.job_id) for job in jobs]
        assert [job.status for job in finished] == [JobStatus.complete] * 2  # clients see the outcome at once
        assert all(Path(request.source_path).exists() for request in requests)  # kept until the record is saved
        with pytest.raises(StorageError):
            await tracker.submit("alice", _request(tmp_path, "new.wav"))  # the ingress answers 507 for this
        assert len(tracker.runner.workers) == 2 and not any(worker.done() for worker in tracker.runner.workers.values())

        store.full = False  # space returns
        await asyncio.sleep(0.3)
        saved = {job.job_id: job.status for job in SQLJobStore(tmp_path / "jobs.sqlite3").load_all()}
        assert saved == {job.job_id: JobStatus.complete for job in jobs}
        assert not any(Path(request.source_path).exists() for request in requests)
        new = await tracker.submit("alice", _request(tmp_path, "after.wav"))
        assert (await _until_finished(tracker, new.job_id)).status == JobStatus.complete
        assert await tracker.ledger.usage.remote("alice") == 3 * 2.5  # each job charged once

    asyncio.run(scenario())


def test_a_job_whose_pipeline_hit_a_full_disk_is_retried_not_failed(tmp_path: Path) -> None:
    class FullOnce(FakePipeline):
        async def remote(self, request: PipelineRequest):
            self.calls += 1
            if self.calls < 3:
                raise OSError(errno.ENOSPC, "No space left on device")
            yield TRANSCRIPT.model_copy()

    async def scenario() -> None:
        pipeline = FullOnce()
        tracker = _tracker(tmp_path, pipeline=pipeline, retry_interval_s=0.05)
        job = await tracker.submit("alice", _request(tmp_path))
        done = await _until_finished(tracker, job.job_id)
        assert done.status == JobStatus.complete and pipeline.calls == 3

    asyncio.run(scenario())


def test_a_dead_worker_is_replaced(tmp_path: Path) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path, max_concurrent_jobs=2, retry_interval_s=0.05)
        tracker.runner.workers[0].cancel()
        await asyncio.sleep(0.2)
        assert len(tracker.runner.workers) == 2 and not any(worker.done() for worker in tracker.runner.workers.values())
        job = await tracker.submit("alice", _request(tmp_path))
        assert (await _until_finished(tracker, job.job_id)).status == JobStatus.complete

    asyncio.run(scenario())


def test_charges_that_cannot_be_written_are_kept_and_written_once_later(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "jobs.sqlite3")
    _query_only(ledger, True)  # every write now fails, as on a full disk
    assert ledger.charge("job-1", "alice", 10.0)
    assert ledger.charge("job-1", "alice", 10.0) is False  # a retry of the same charge
    assert ledger.usage("alice") == 10.0  # counted while it waits
    _query_only(ledger, False)
    ledger.flush()
    assert ledger.usage("alice") == 10.0 and ledger.pending == {}
    assert UsageLedger(tmp_path / "jobs.sqlite3").usage("alice") == 10.0  # durable, once


def _query_only(ledger: UsageLedger, on: bool) -> None:
    """Make the ledger's one SQLite connection refuse every write (as a full disk would), or take them again."""
    with ledger.engine.connect() as connection:
        connection.exec_driver_sql(f"PRAGMA query_only = {'ON' if on else 'OFF'}")


class DiesTwice(FakePipeline):
    """The replica running the job dies on the first two runs, with the words Ray uses."""

    async def remote(self, request: PipelineRequest):
        self.calls += 1
        yield PipelineProgress(share=0.3)
        if self.calls <= 2:
            lost = ray_errors.ActorDiedError()
            raise ray_errors.RayTaskError("transcribe_streaming", "Traceback ...", lost).as_instanceof_cause()
        yield TRANSCRIPT.model_copy()


def test_a_job_whose_worker_died_is_run_again_and_charged_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        pipeline = DiesTwice()
        tracker = _tracker(tmp_path, pipeline=pipeline, retry_interval_s=0.02)
        job = await tracker.submit("alice", _request(tmp_path))
        done = await _until_finished(tracker, job.job_id)
        assert done.status == JobStatus.complete and done.error is None and pipeline.calls == 3
        assert done.transcript == TRANSCRIPT
        assert await tracker.ledger.usage.remote("alice") == 2.5

    asyncio.run(scenario())


def test_a_job_that_keeps_failing_ends_after_its_attempts_without_ray_internals(tmp_path: Path) -> None:
    class AlwaysDies(FakePipeline):
        async def remote(self, request: PipelineRequest):
            self.calls += 1
            raise ray_errors.ActorDiedError()
            yield  # an async generator, like the handle's stream

    async def scenario() -> None:
        pipeline = AlwaysDies()
        tracker = _tracker(tmp_path, pipeline=pipeline, retry_interval_s=0.01)
        request = _request(tmp_path)
        done = await _until_finished(tracker, (await tracker.submit("alice", request)).job_id)
        assert done.status == JobStatus.error and pipeline.calls == MAX_ATTEMPTS
        assert done.error.startswith(f"the service could not complete this job in {MAX_ATTEMPTS} attempts")
        assert "actor" not in done.error.lower()
        assert await tracker.ledger.usage.remote("alice") == 0.0
        assert not Path(request.source_path).exists()

    asyncio.run(scenario())


def test_jobs_cut_off_by_a_stopping_application_stay_in_progress_and_run_at_the_next_start(tmp_path: Path) -> None:
    """Ctrl-C of `serve run`: the pipeline's calls fail while everything stops, then the tracker itself is
    gone. The store still has the jobs in progress, and the next tracker runs them."""

    async def stopping() -> list[str]:
        pipeline = DiesTwice()
        pipeline.calls = -100  # dies on every run while the application stops
        tracker = _tracker(tmp_path, pipeline=pipeline, retry_interval_s=0.05)
        jobs = [await tracker.submit("alice", _request(tmp_path, f"{n}.wav")) for n in range(3)]
        await asyncio.sleep(0.03)  # one failed attempt each, then the process ends
        for job in jobs:
            polled = await tracker.get(job.job_id, "alice")
            assert polled is not None and polled.status == JobStatus.in_progress
        for worker in tracker.runner.workers.values():
            worker.cancel()
        tracker._maintenance.cancel()
        return [job.job_id for job in jobs]

    job_ids = asyncio.run(stopping())

    async def next_start() -> None:
        tracker = _tracker(tmp_path)
        done = [await _until_finished(tracker, job_id) for job_id in job_ids]
        assert [job.status for job in done] == [JobStatus.complete] * 3
        assert await tracker.ledger.usage.remote("alice") == 3 * 2.5

    asyncio.run(next_start())


def test_stalled_jobs_are_reported_with_the_workers_stacks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        tracker = _tracker(tmp_path)
        await asyncio.sleep(0)  # the workers wait on the queue
        tracker.runner.queue.put_nowait("a-job-no-worker-took")  # as if a wake-up were lost
        with caplog.at_level("WARNING", logger="ray.serve"):
            for _ in range(STALL_WARNING_ROUNDS):
                tracker.watchdog.warn_if_stalled()
        assert "1 jobs queued, 0 running" in caplog.text and "worker 0:" in caplog.text
        tracker.runner.queue.get_nowait()
        tracker.watchdog.warn_if_stalled()
        assert tracker.watchdog.stalled_rounds == 0
        tracker.runner.running["a-silent-job"] = (0, time.monotonic() - SILENT_JOB_WARNING_S)  # running, never heard
        with caplog.at_level("WARNING", logger="ray.serve"):
            tracker.watchdog.warn_if_stalled()
        assert "job a-silent-job: no progress for 120 s; worker 0:" in caplog.text

    asyncio.run(scenario())


def test_a_diarized_jobs_recording_is_kept_as_long_as_the_job_unless_turned_off(tmp_path: Path) -> None:
    """So that one of its speakers can be enrolled as a voice (POST /v1/voices with job_id)."""

    async def scenario(keep: bool) -> None:
        clock, state = Clock(), tmp_path / f"keep-{keep}"
        state.mkdir()
        tracker = _tracker(state, clock=clock, keep_diarized_recordings=keep)
        diarized = _request(state, "call.wav").model_copy(update={"diarization": DiarizationOptions()})
        job = await _until_finished(tracker, (await tracker.submit("alice", diarized)).job_id)
        plain = await _until_finished(tracker, (await tracker.submit("alice", _request(state))).job_id)
        kept = state / "recordings" / job.job_id
        assert kept.exists() == keep and (not keep or kept.read_bytes() == b"audio")
        assert not (state / "call.wav").exists() and not (state / "clip.wav").exists()  # the spool is empty
        assert not (state / "recordings" / plain.job_id).exists()
        clock.now += timedelta(hours=12)
        assert await tracker.sweep() == 2 and not kept.exists()  # gone with the job

    asyncio.run(scenario(True))
    asyncio.run(scenario(False))


def test_a_redacting_job_keeps_its_redacted_audio_as_long_as_the_job_and_never_its_recording(tmp_path: Path) -> None:
    """The audio holds what the transcript hides: a diarized job that redacts keeps no recording to enrol from;
    the redacted audio its run wrote beside the input is the job's until the job is forgotten."""

    async def scenario() -> None:
        clock = Clock()
        tracker = _tracker(tmp_path, clock=clock)
        redaction = RedactionOptions(classes=[RedactionClass.person_name], audio="mp3")
        request = _request(tmp_path, "call.wav").model_copy(update={"diarization": DiarizationOptions()})
        request = request.model_copy(update={"options": request.options.model_copy(update={"redaction": redaction})})
        redacted_audio_path(tmp_path / "call.wav", "mp3").write_bytes(b"beeped")  # as the run writes it
        job = await _until_finished(tracker, (await tracker.submit("alice", request)).job_id)
        kept = tmp_path / "recordings" / f"{job.job_id}.redacted.mp3"
        assert kept.read_bytes() == b"beeped" and not (tmp_path / "recordings" / job.job_id).exists()
        assert not list(tmp_path.glob("call.wav*"))  # the spool is empty
        clock.now += timedelta(hours=12)
        assert await tracker.sweep() == 1 and not kept.exists()

    asyncio.run(scenario())
