"""The service with job records and the usage ledger in a real PostgreSQL server (`storage.database_url`, the
password from the environment, as on a cluster): jobs run and are charged once, with the tracker's actor killed
their polls are still answered from the store (by a new ingress replica: no answer kept in memory), and the
tracker Ray starts again (a new process) finds them and runs the next job. A whole application's restart on a
store that holds jobs is the storage contract's (`tests/test_storage_contract.py`, on PostgreSQL too: a tracker
finds its jobs after a restart) and the shared service's (`tests/test_callbacks_service.py`): not paid twice here.

It starts its own service (not the shared one, which keeps SQLite), on its own local Ray instance."""

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deployments.files.decoding import decode_audio
from deployments.jobs.records import owner_of
from devkit.faults import kill
from devkit.jobs import JobClient
from devkit.local_service import LocalService, serves
from devkit.media import encode, pyannote_sample
from tests.postgres import PASSWORD_ENV, USER, PostgresServer

pytestmark = pytest.mark.slow  # it starts and restarts a service of its own

KEY = "test-key-postgres"
ASYNC = "/v1/audio/transcriptions/async"


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database()


@pytest.fixture(scope="module")
def pg_service(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server: PostgresServer,
    database: str,
) -> Iterator[LocalService]:
    workdir = tmp_path_factory.mktemp("postgres-service")
    storage = {"database_url": database, "database_password_env": PASSWORD_ENV}
    with LocalService(
        workdir, [KEY], storage=storage, env={PASSWORD_ENV: postgres_server.password}, jobs={"retry_interval_s": 1}
    ) as running:
        yield running


def _charges(server: PostgresServer, database: str) -> list[tuple[str, str, float]]:
    import psycopg

    name = database.rsplit("/", 1)[1]
    dsn = f"host={server.host} port={server.port} user={USER} password={server.password} dbname={name}"
    with psycopg.connect(dsn) as connection:
        return connection.execute("SELECT charge_id, owner, audio_seconds FROM charges").fetchall()


def test_jobs_in_postgresql_answer_polls_while_the_tracker_is_down_and_outlive_it(
    pg_service: LocalService,
    postgres_server: PostgresServer,
    database: str,
) -> None:
    speech = encode(decode_audio(pyannote_sample()).samples[6 * 16_000 : 13 * 16_000], "wav")
    headers = {"Authorization": f"Bearer {KEY}"}
    with JobClient(pg_service.base_url, KEY) as jobs:
        ids = [jobs.submit(speech, "a.wav", response_format=fmt)["job_id"] for fmt in ("json", "text", "srt")]
        before = {job_id: jobs.wait(job_id, timeout_s=180) for job_id in ids}
    assert [job["status"] for job in before.values()] == ["complete"] * 3
    assert not (Path(pg_service.storage["state_dir"]) / "jobs.sqlite3").exists()  # nothing in SQLite
    charges = _charges(postgres_server, database)
    assert sorted(charge_id for charge_id, _, _ in charges) == sorted(ids)  # one charge per job
    assert {owner for _, owner, _ in charges} == {owner_of(KEY)}

    assert kill(pg_service, "Ingress") == 1  # the ingress replica dies: Serve starts one that keeps no answer...
    deadline = time.monotonic() + 120
    while not serves(pg_service.base_url, KEY):
        assert time.monotonic() < deadline, pg_service.log_tail()
        time.sleep(0.5)
    assert kill(pg_service, "JobTracker") == 1  # ...and the tracker's actor dies: Ray restarts it, meanwhile polls...
    with (
        httpx.Client(base_url=pg_service.base_url, headers=headers, timeout=120) as client,
        JobClient(pg_service.base_url, KEY) as jobs,
    ):
        for job_id in ids:
            started = time.monotonic()
            response = client.get(f"{ASYNC}/{job_id}")
            assert response.status_code == 200 and time.monotonic() - started < 1.0  # ...read the store
            assert response.json() == before[job_id]  # found, as it was
        again = jobs.submit(speech, "a.wav")["job_id"]  # the tracker is back
        assert jobs.wait(again, timeout_s=180)["status"] == "complete"
    assert len(_charges(postgres_server, database)) == 4  # nothing charged again by the new tracker
