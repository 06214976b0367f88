"""The storage contract: what the job store, the poll reader and the usage ledger promise, held by both
backends, SQLite (the embedded default) and a real PostgreSQL server (tests/postgres.py), through the
settings users write (`storage.state_dir`, or `storage.database_url` with the password in the environment)."""

import asyncio
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from deployments.billing.ledger import ChargeDetails, UsageLedger
from deployments.callbacks.store import CallbackOutbox, CallbackState, CallbackStatus, retry_delay
from deployments.config import CallbacksConfig, JobsConfig, StorageConfig
from deployments.errors import StorageError
from deployments.jobs._store import SQLJobStore
from deployments.jobs.reader import JobReader
from deployments.jobs.records import Job, JobRequest, JobStatus
from deployments.jobs.tracker import JobTracker
from deployments.storage.database import MIGRATIONS, database_engine, migrate_schema
from deployments.types import TranscriptionOptions
from serve_app.rendering.response_formats import RenderSpec
from tests.fakes import Actor
from tests.postgres import PASSWORD_ENV
from tests.test_job_tracker import TRANSCRIPT, Clock, FakePipeline, _request, _until_finished


def _job(job_id: str, owner: str = "alice", clock: Clock | None = None) -> Job:
    return Job(job_id=job_id, owner=owner, created_at=(clock or Clock())(), request=_request_for(job_id))


def _request_for(job_id: str) -> JobRequest:
    return JobRequest(source_path=f"/spool/{job_id}", options=TranscriptionOptions(), render=RenderSpec().stored())


def test_the_schema_is_made_once_and_every_opener_finds_it(storage: StorageConfig) -> None:
    engines = [database_engine(storage) for _ in range(4)]
    versions: list[int] = []
    threads = [threading.Thread(target=lambda e=engine: versions.append(migrate_schema(e))) for engine in engines]
    for thread in threads:  # the tracker and the ledger open the database at once, maybe on two nodes
        thread.start()
    for thread in threads:
        thread.join()
    assert versions == [len(MIGRATIONS)] * 4 and migrate_schema(engines[0]) == len(MIGRATIONS)


def test_jobs_are_saved_replaced_loaded_and_deleted(storage: StorageConfig) -> None:
    store = SQLJobStore(storage)
    first, second = _job("one"), _job("two", owner="bob")
    store.save(first)
    store.save(second)
    done = first.model_copy(update={"status": JobStatus.complete, "transcript": TRANSCRIPT, "progress": 1.0,
                                    "completed_at": first.created_at + timedelta(seconds=3)})  # fmt: skip
    store.save(done)  # a record is replaced, never doubled
    assert sorted(job.job_id for job in store.load_all()) == ["one", "two"]
    assert SQLJobStore(storage).load("one", "alice") == done  # another opener (a restart) reads the same
    assert store.load("one", "bob") is None and store.load("missing", "alice") is None  # only the owner's
    store.delete(["one", "missing"])
    assert [job.job_id for job in store.load_all()] == ["two"]
    store.delete([])


def test_the_reader_sees_what_the_tracker_stored_and_nothing_expired(storage: StorageConfig) -> None:
    clock = Clock()
    store = SQLJobStore(storage)
    reader = JobReader(JobsConfig(retention_s=60), storage, clock=clock)
    running = _job("running", clock=clock).model_copy(update={"progress": 0.25})
    done = _job("done", clock=clock).model_copy(
        update={"status": JobStatus.complete, "transcript": TRANSCRIPT, "completed_at": clock()}
    )
    store.save(running)
    store.save(done)
    assert reader.get("running", "alice") == running and reader.get("done", "alice") == done
    assert reader.get("done", "mallory") is None
    clock.now += timedelta(seconds=60)
    assert reader.get("done", "alice") is None  # past its retention: gone, as the tracker's sweep will make it
    assert reader.get("running", "alice") == running
    assert len(store.load_all()) == 2  # the reader deletes nothing: the tracker owns the writes


def test_a_charge_is_recorded_once_however_many_ledgers_write_it(storage: StorageConfig) -> None:
    ledgers = [UsageLedger(storage) for _ in range(2)]  # e.g. a restarted ledger beside a retried call
    details = ChargeDetails(model="whisper-1", rate_per_min=0.6, bytes=1000)
    results: list[bool] = []

    def charge(ledger: UsageLedger) -> None:
        for n in range(20):
            results.append(ledger.charge(f"job-{n}", "alice", 30.0, details))

    threads = [threading.Thread(target=charge, args=(ledger,)) for ledger in ledgers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    fresh = UsageLedger(storage)
    assert fresh.usage("alice") == 20 * 30.0 and fresh.usage("bob") == 0.0  # no double charge
    assert fresh.spent("alice", rate_per_min=10.0) == pytest.approx(20 * 0.3)  # each at its recorded cost
    assert results.count(True) >= 20


def test_usage_pages_are_newest_first_and_costless_charges_are_priced(storage: StorageConfig) -> None:
    ledger = UsageLedger(storage)
    for n in range(5):
        ledger.charge(f"c{n}", "alice", 60.0, ChargeDetails(task="diarize", emotions=n == 4, llm_input_tokens=n))
    ledger.charge("other", "bob", 60.0)
    page = ledger.usage_page("alice", None, 3)
    assert [row.charge_id for row in page] == ["c4", "c3", "c2"]
    assert page[0].emotions is True and page[1].emotions is False and page[0].llm_input_tokens == 4
    assert page[0].cost is None and page[0].task == "diarize" and page[0].profanity_filter is False
    rest = ledger.usage_page("alice", page[-1].row_id, 3)
    assert [row.charge_id for row in rest] == ["c1", "c0"]
    assert ledger.spent("alice", rate_per_min=1.0) == pytest.approx(5.0)  # no cost recorded: priced at the rate


def test_a_tracker_runs_charges_and_finds_its_jobs_again_after_a_restart(storage: StorageConfig) -> None:
    workdir = Path(storage.state_dir)
    workdir.mkdir(parents=True, exist_ok=True)

    async def scenario() -> None:
        ledger = UsageLedger(storage)
        tracker = JobTracker(JobsConfig(retry_interval_s=0.05), storage, FakePipeline(), Actor(ledger))  # type: ignore[arg-type]  # fakes for the Ray handles
        job = await tracker.submit("alice", _request(workdir))
        finished = await _until_finished(tracker, job.job_id)
        assert finished.status == JobStatus.complete
        for task in [*tracker.runner.workers.values(), tracker._maintenance]:
            task.cancel()
        again = JobTracker(JobsConfig(), storage, FakePipeline(), Actor(UsageLedger(storage)))  # type: ignore[arg-type]  # fakes for the Ray handles
        assert await again.get(job.job_id, "alice") == finished
        assert JobReader(JobsConfig(), storage).get(job.job_id, "alice") == finished
        assert await again.ledger.usage.remote("alice") == 2.5  # charged once
        for task in [*again.runner.workers.values(), again._maintenance]:
            task.cancel()

    asyncio.run(scenario())


def test_a_database_that_cannot_be_reached_is_a_storage_error(postgres_server, monkeypatch) -> None:
    """The tracker keeps an outcome it cannot write and tries again; the ingress answers 503: both know
    StorageError, whatever the backend."""
    monkeypatch.setenv(PASSWORD_ENV, postgres_server.password)
    url = postgres_server.create_database()
    store = SQLJobStore(StorageConfig(database_url=url, database_password_env=PASSWORD_ENV))
    unreachable = StorageConfig(database_url=url.replace(f":{postgres_server.port}/", ":1/"))
    store.engine = database_engine(unreachable)
    with pytest.raises(StorageError):
        store.save(_job("lost"))


def test_the_password_comes_from_the_environment_when_the_database_is_opened(monkeypatch) -> None:
    storage = StorageConfig(database_url="postgresql://stt@db.example:5432/stt", database_password_env="PW")
    monkeypatch.delenv("PW", raising=False)
    unset = storage.database_target()
    assert isinstance(unset, URL)
    assert unset.password is None
    monkeypatch.setenv("PW", "s3cret")
    target = storage.database_target()
    assert isinstance(target, URL)
    assert target.password == "s3cret" and target.host == "db.example" and "s3cret" not in storage.model_dump_json()
    with pytest.raises(ValueError, match="PostgreSQL"):
        StorageConfig(database_url="mysql://stt@db/stt")
    assert StorageConfig(state_dir="/srv/stt").database_target() == Path("/srv/stt/jobs.sqlite3")


def test_a_sqlite_file_of_an_earlier_version_opens_with_its_charges_and_jobs(tmp_path: Path) -> None:
    """Files written before the versioned schema (tables made by `CREATE TABLE IF NOT EXISTS`, columns added
    one by one, no `schema_version`) are brought to the newest version in place, rows kept."""
    import sqlite3

    path = tmp_path / "jobs.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, charge_id TEXT UNIQUE NOT NULL,"
                " owner TEXT NOT NULL, audio_seconds REAL NOT NULL, task TEXT NOT NULL, created_at REAL NOT NULL,"
                " model TEXT, language TEXT)")  # fmt: skip
    old.execute("INSERT INTO charges (charge_id, owner, audio_seconds, task, created_at, model) VALUES"
                " ('job-1', 'alice', 30.0, 'transcribe', 1.0, 'whisper-1')")  # fmt: skip
    old.execute("CREATE TABLE jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,"
                " completed_at TEXT, record TEXT NOT NULL)")  # fmt: skip
    old.execute("INSERT INTO jobs VALUES ('one', 'alice', 'in_progress', NULL, ?)", (_job("one").model_dump_json(),))
    old.commit()
    old.close()
    ledger = UsageLedger(path)
    assert not ledger.charge("job-1", "alice", 30.0)  # charged before the upgrade: still once
    (row,) = ledger.usage_page("alice", None, 10)
    assert row.model == "whisper-1" and row.bytes == 0 and row.emotions is False and row.cost is None
    assert ledger.spent("alice", rate_per_min=2.0) == pytest.approx(1.0)
    assert [job.job_id for job in SQLJobStore(path).load_all()] == ["one"]
    assert migrate_schema(database_engine(path)) == len(MIGRATIONS)


# ---- the callback outbox ----


class Seconds:
    """A settable Unix-seconds clock."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _finished_with_callback(store: SQLJobStore, job_id: str, url: str = "http://127.0.0.1:9/hook") -> Job:
    job = _job(job_id)
    job = job.model_copy(update={"request": job.request.model_copy(update={"callback_url": url})})
    store.save(job)  # running: no callback yet
    ended = job.model_copy(update={"status": JobStatus.complete, "completed_at": job.created_at + timedelta(seconds=5)})
    store.save(ended)
    store.save(ended)  # saved again (a retried write): still one callback
    return ended


def test_a_jobs_end_and_its_callback_are_stored_together_and_claimed_once(storage: StorageConfig) -> None:
    store = SQLJobStore(storage)
    job = _finished_with_callback(store, "one")
    assert job.completed_at is not None
    ended_at = job.completed_at.timestamp()
    clock = Seconds(ended_at)
    config = CallbacksConfig(lease_s=30, timeout_s=10, backoff_base_s=10, backoff_max_s=100, min_attempts=3)
    replicas = [CallbackOutbox(database_engine(storage, reading=True), config, 3600, clock, lambda: 1.0) for _ in "ab"]
    assert replicas[0].state("one") == CallbackState()
    (claim,) = replicas[0].claim(10)
    assert (claim.job_id, claim.owner, claim.url, claim.attempts) == ("one", "alice", "http://127.0.0.1:9/hook", 0)
    assert replicas[1].claim(10) == []  # held by the first replica
    clock.now += 31  # the first replica died holding it: its lease expires
    (again,) = replicas[1].claim(10)
    assert replicas[0].attempt_failed(claim, 500).attempts == 1  # a stale claim records nothing...
    assert replicas[0].state("one") == CallbackState()
    state = replicas[1].attempt_failed(again, 500)  # ...the holder does
    assert state == CallbackState(status=CallbackStatus.pending, attempts=1, last_status=500)
    assert replicas[0].state("one") == state
    assert replicas[0].claim(10) == []  # backing off: 10 s
    clock.now += 10
    (third,) = replicas[0].claim(10)
    assert third.attempts == 1 and third.last_status == 500
    assert replicas[0].attempt_failed(third, None).status == CallbackStatus.pending
    clock.now += 19
    assert replicas[0].claim(10) == []  # the wait doubled: 20 s
    clock.now += 1
    (fourth,) = replicas[1].claim(10)
    assert replicas[1].delivered(fourth, 204) == CallbackState(
        status=CallbackStatus.delivered, attempts=3, last_status=204
    )
    clock.now += 10_000
    assert replicas[0].claim(10) == []
    assert replicas[0].state("one") == CallbackState(status=CallbackStatus.delivered, attempts=3, last_status=204)
    store.delete(["one"])  # the job expires: its callback goes with it
    assert replicas[0].state("one") is None


def test_a_callback_fails_after_its_attempts_once_the_result_is_gone(storage: StorageConfig) -> None:
    store = SQLJobStore(storage)
    job = _finished_with_callback(store, "two")
    assert job.completed_at is not None
    clock = Seconds(job.completed_at.timestamp())
    config = CallbacksConfig(backoff_base_s=10, backoff_max_s=1000, min_attempts=3)
    outbox = CallbackOutbox(database_engine(storage), config, retention_s=15, clock=clock, rng=lambda: 0.0)
    states = []
    for _ in range(5):
        claims = outbox.claim(10)
        if not claims:
            break
        states.append(outbox.attempt_failed(claims[0], 503))
        clock.now += 1000
    # Past the retention (15 s) after the first wait, but at least min_attempts are made.
    assert [state.status for state in states] == [CallbackStatus.pending] * 2 + [CallbackStatus.failed]
    assert outbox.state("two") == CallbackState(status=CallbackStatus.failed, attempts=3, last_status=503)


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    config = CallbacksConfig(backoff_base_s=10, backoff_max_s=100)
    assert [retry_delay(n, config, lambda: 1.0) for n in range(1, 7)] == [10, 20, 40, 80, 100, 100]
    assert [retry_delay(n, config, lambda: 0.0) for n in range(1, 4)] == [5, 10, 20]  # half of it is random


def test_replicas_claiming_at_once_never_share_a_callback(storage: StorageConfig) -> None:
    store = SQLJobStore(storage)
    ends = [_finished_with_callback(store, f"job-{n}") for n in range(24)]
    now = max(job.completed_at.timestamp() for job in ends if job.completed_at is not None)
    config = CallbacksConfig()
    outboxes = [CallbackOutbox(database_engine(storage, reading=True), config, 3600, lambda: now) for _ in range(4)]
    claimed: list[str] = []
    lock = threading.Lock()

    def claim_all(outbox: CallbackOutbox) -> None:
        while claims := outbox.claim(5):
            with lock:
                claimed.extend(claim.job_id for claim in claims)

    threads = [threading.Thread(target=claim_all, args=(outbox,)) for outbox in outboxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == sorted(job.job_id for job in ends)  # each once
