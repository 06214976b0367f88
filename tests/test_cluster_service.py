"""The service on a Ray cluster of several nodes (devkit/local_cluster.py: a head with no replicas, three worker
nodes), job records and the usage ledger in a real PostgreSQL server, as a cluster keeps them (SQLite on the
shared state_dir where PostgreSQL is not installed):

- a backfill: Transcriber replicas scale from zero to several on the queue, and back to zero once it drains;
- the ingress replicas and the job tracker's actor are killed (processes, as the OOM killer would): polls of
  finished jobs are answered from the database at once, by new ingress replicas that keep no answer, while the
  tracker is down; Ray starts the tracker again, which charges nothing twice and runs the next job;
- a worker node running a Transcriber replica is lost mid-jobs: every job completes on the other nodes;
- the worker node holding the job tracker's actor is lost mid-jobs: Ray restarts the tracker on another node,
  and the queue resumes.

Each time every job completes, none in error, none lost, each charged exactly once (counted in the database).
The cluster keeps its Ray files apart (RAY_TMPDIR), so the `serve run` services of the other modules are
unaffected whatever order the modules run in."""

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deployments.files.decoding import decode_audio
from devkit.charges import charges_of
from devkit.faults import processes_under
from devkit.jobs import JobClient
from devkit.local_cluster import LocalCluster
from devkit.local_service import serves
from devkit.media import encode, pyannote_sample
from tests.postgres import PASSWORD_ENV, PostgresServer, postgres_binaries

pytestmark = pytest.mark.slow  # it starts a Ray cluster of its own and removes its nodes

KEYS = ["test-key-backfill", "test-key-node-lost", "test-key-tracker-node-lost", "test-key-tracker-killed"]
JOBS = 16
"""Queued at once: enough for several replicas (two each) and for jobs still to do when a node is lost."""
TRANSCRIBER = "ServeReplica:stt:Transcriber"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """The cluster, its jobs and charges in PostgreSQL; where PostgreSQL is not installed, in SQLite on the
    state_dir all nodes share (one machine's disk: safe here, unlike a network volume)."""
    storage: dict = {}
    env: dict[str, str] = {}
    previous = os.environ.get(PASSWORD_ENV)
    if postgres_binaries() is not None:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        storage = {"database_url": server.create_database(), "database_password_env": PASSWORD_ENV}
        env = {PASSWORD_ENV: server.password}
        os.environ[PASSWORD_ENV] = server.password  # for this module's reads of the charges
    try:
        with LocalCluster(tmp_path_factory.mktemp("cluster"), KEYS, storage=storage, env=env) as running:
            yield running
    finally:
        if previous is None:
            os.environ.pop(PASSWORD_ENV, None)
        else:
            os.environ[PASSWORD_ENV] = previous


@pytest.fixture(scope="module")
def clip() -> bytes:
    """3 s of speech: a short job, so that a backfill of dozens runs in seconds."""
    return encode(decode_audio(pyannote_sample()).samples[6 * 16_000 : 9 * 16_000], "flac")


class ReplicaWatch:
    """The most Transcriber replicas seen running, and the nodes they ran on, sampled while jobs run."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.most = 0
        self.nodes: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.most = max(self.most, self.cluster.replicas("Transcriber"))
            self.nodes |= self.cluster.nodes_of(TRANSCRIBER)
            self._stop.wait(0.5)

    def __enter__(self) -> "ReplicaWatch":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _wait_for(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout_s} s")


def _client(cluster: LocalCluster, key: str) -> JobClient:
    return JobClient(cluster.base_url, key, timeout_s=60)


def _assert_every_job_complete_and_charged_once(cluster: LocalCluster, key: str, states: dict[str, str]) -> None:
    assert sorted(set(states.values())) == ["complete"], {s: list(states.values()).count(s) for s in states.values()}
    charged = charges_of(cluster.storage, key)
    assert set(charged) == set(states)  # one charge per job (charge ids are unique) and nothing else to the key
    assert all(seconds > 0 for seconds in charged.values())


def _submit_all(client: JobClient, clip: bytes) -> list[str]:
    return [client.submit(clip, "speech.flac", task="transcribe")["job_id"] for _ in range(JOBS)]


def _wait_until_some_complete(client: JobClient, job_ids: list[str]) -> None:
    """Until jobs are running: one has finished, so replicas are up and the others are queued or under way."""
    _wait_for(lambda: any((job := client.poll(j)) and job["status"] == "complete" for j in job_ids), 120, "a job done")


def test_transcribers_scale_from_zero_to_several_and_back_to_zero(cluster: LocalCluster, clip: bytes) -> None:
    _wait_for(lambda: cluster.replicas("Transcriber") == 0, 60, "no Transcriber replica while nothing is queued")
    with _client(cluster, KEYS[0]) as client, ReplicaWatch(cluster) as watch:
        job_ids = _submit_all(client, clip)
        states = client.wait_for_all(job_ids, timeout_s=180)
    _assert_every_job_complete_and_charged_once(cluster, KEYS[0], states)
    assert watch.most > 1, f"the queue of {JOBS} jobs scaled the Transcriber to {watch.most} replica(s) only"
    assert watch.nodes <= {node.node_id for node in cluster.worker_nodes()}  # on worker nodes only, not the head
    _wait_for(lambda: cluster.replicas("Transcriber") == 0, 60, "the Transcriber back to zero after the queue drained")


POLL_WITHOUT_TRACKER_S = 20
"""A poll while the tracker hangs answers within this (a poll through the tracker would not answer at all)."""


def test_polls_are_answered_from_the_database_while_the_tracker_is_down_and_it_charges_nothing_twice(
    cluster: LocalCluster, clip: bytes
) -> None:
    key = KEYS[3]
    with _client(cluster, key) as client:
        ids = [client.submit(clip, "a.flac", response_format=fmt)["job_id"] for fmt in ("json", "text", "srt")]
        before = {job_id: client.wait(job_id, timeout_s=180) for job_id in ids}
        assert [job["status"] for job in before.values()] == ["complete"] * 3
        assert set(charges_of(cluster.storage, key)) == set(ids)  # one charge per job
        if "database_url" in cluster.storage:
            assert not (Path(cluster.storage["state_dir"]) / "jobs.sqlite3").exists()  # nothing in SQLite

        assert cluster.kill("Ingress") == 2  # both ingress replicas die: Serve starts new ones that keep no answer...
        _wait_for(lambda: serves(cluster.base_url, key), 120, "new ingress replicas serving")
        (tracker,) = processes_under(os.getpid(), "JobTracker")
        tracker.suspend()  # ...and the tracker hangs (SIGSTOP): polls...
        try:
            for job_id in ids:
                started = time.monotonic()
                assert client.poll(job_id) == before[job_id]  # ...read the store: found, as it was...
                # ...without the tracker: one that waited for it would never answer. Not a tighter bound: this
                # cluster runs at nice 15 beside the shared service's live sessions (a poll took 5 s once).
                assert time.monotonic() - started < POLL_WITHOUT_TRACKER_S
        finally:
            assert cluster.kill("JobTracker") == 1  # the hung tracker's actor dies: Ray restarts it
        again = client.submit(clip, "a.flac")["job_id"]  # the tracker is back
        assert client.wait(again, timeout_s=180)["status"] == "complete"
    assert set(charges_of(cluster.storage, key)) == {*ids, again}  # nothing charged again by the new tracker


def test_a_lost_worker_node_loses_no_job(cluster: LocalCluster, clip: bytes) -> None:
    with _client(cluster, KEYS[1]) as client:
        job_ids = _submit_all(client, clip)
        _wait_until_some_complete(client, job_ids)
        tracker = cluster.node_with("JobTracker")

        def transcribing_node() -> Any:  # Ray's Node, as LocalCluster.worker_nodes gives it
            held = cluster.nodes_of(TRANSCRIBER)
            return next((n for n in cluster.worker_nodes() if n.node_id in held and n is not tracker), None)

        _wait_for(transcribing_node, 60, "a worker node running a Transcriber replica, not the tracker's")
        lost = transcribing_node()
        unfinished = sum(1 for j in job_ids if (job := client.poll(j)) is None or job["status"] != "complete")
        cluster.remove_node(lost)
        states = client.wait_for_all(job_ids, timeout_s=180)
    assert unfinished > 0  # the node was lost while jobs were still to do
    _assert_every_job_complete_and_charged_once(cluster, KEYS[1], states)
    # Ray marks a killed node's actors dead after its health checks fail (seconds): the jobs can all finish first
    _wait_for(lambda: lost.node_id not in cluster.nodes_of(TRANSCRIBER), 60, "the lost node's Transcriber marked dead")
    # the lost VM is not replaced: the next test loses the tracker's node with two workers left, one of which then
    # runs the tracker and a Transcriber (a node's start took over Ray's 30 s limit once on a loaded 2-core machine)


def test_the_tracker_node_lost_the_tracker_comes_back_elsewhere_and_the_queue_resumes(
    cluster: LocalCluster, clip: bytes
) -> None:
    lost = cluster.node_with("JobTracker")
    assert lost is not None, "the tracker runs on a worker node (storage.actor_resources)"
    with _client(cluster, KEYS[2]) as client:
        job_ids = _submit_all(client, clip)
        _wait_until_some_complete(client, job_ids)
        unfinished = sum(1 for j in job_ids if (job := client.poll(j)) is None or job["status"] != "complete")
        cluster.remove_node(lost)
        # Ray notices the lost node by missed health checks, then restarts the actor: over 60 s on a loaded 2-core CI
        _wait_for(lambda: cluster.nodes_of("JobTracker") - {lost.node_id}, 120, "the tracker restarted on another node")
        states = client.wait_for_all(job_ids, timeout_s=180)
    assert unfinished > 0
    _assert_every_job_complete_and_charged_once(cluster, KEYS[2], states)
    assert cluster.nodes_of("JobTracker") and lost.node_id not in cluster.nodes_of("JobTracker")
