"""Kill what clusters kill, mid-jobs, and count what became of the jobs.

    python -m scripts.chaos                       # every fault, on a local service of its own
    python -m scripts.chaos --faults Transcriber,restart --jobs 4
    python -m scripts.chaos --faults node,tracker-node --jobs 24 --minutes 0.05   # the node-loss rows only

Local only and bounded: it starts the service with `serve run` (scripts/local_service.py) in a temporary
directory, and for each fault submits a batch of asynchronous jobs under a key of the fault's own, waits
until they are under way, then SIGKILLs every process of one replica kind (or the job tracker), or stops
the whole application with Ctrl-C and starts it again. The node-loss faults run on a cluster of several
Ray nodes on this machine (scripts/local_cluster.py: a head and three workers, the Transcriber autoscaled
from zero): `node` removes a worker node running a Transcriber replica (not the tracker's), `tracker-node`
the worker node holding the job tracker's actor, each with every process on it killed at once, as a lost
VM. It then waits for every job and prints, per fault: jobs submitted / completed / error / lost (still
unfinished at the deadline, or unknown to the service), and charged twice (audio seconds charged to the
fault's key beyond the completed jobs' own, read from the usage ledger through the storage layer: SQLite
or PostgreSQL alike).
"""

import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import psutil
import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy import select

from deployments.config import StorageConfig
from deployments.files.decoding import decode_audio
from deployments.jobs.records import owner_of
from deployments.storage.database import charges, database_engine
from scripts.local_cluster import LocalCluster
from scripts.local_service import LocalService
from tests.media import encode, pyannote_sample

ASYNC = "/v1/audio/transcriptions/async"
REPLICA_KINDS = ("Ingress", "TranscriptionPipeline", "Transcriber", "Diarizer")
NODE_FAULTS = ("node", "tracker-node")
SPEECH_FROM = 6 * 16_000
"""Where speech begins in pyannote's call (its first seconds are silence, which VAD skips: no work at all)."""
FAULTS = (*REPLICA_KINDS, "JobTracker", "restart", *NODE_FAULTS)


@dataclass
class Outcome:
    fault: str
    submitted: int
    completed: int
    error: int
    lost: int
    charged_twice_s: float
    killed: int
    seconds: float


def processes_of(service: LocalService, kind: str) -> list[psutil.Process]:
    """The live processes of one replica kind (or the tracker actor) under this service's `serve run`:
    Ray names each worker process after the actor it hosts (`ray::ServeReplica:stt:Transcriber`)."""
    title = "ray::JobTracker" if kind == "JobTracker" else f"ray::ServeReplica:stt:{kind}"
    found = []
    for process in psutil.Process(service.process.pid).children(recursive=True):
        try:
            command = " ".join(process.cmdline())
        except psutil.Error:
            continue
        if command.startswith(title) and (command == title or not command[len(title)].isalnum()):
            found.append(process)
    return found


def kill(service: LocalService, kind: str) -> int:
    """SIGKILL, as the OOM killer or a preempted node would; returns how many processes."""
    victims = processes_of(service, kind)
    for process in victims:
        process.send_signal(signal.SIGKILL)
    return len(victims)


def submit(client: httpx.Client, audio: bytes, task: str) -> str:
    response = client.post(ASYNC, files={"file": ("speech.flac", audio)}, data={"task": task})
    response.raise_for_status()
    return response.json()["job_id"]


def poll(client: httpx.Client, job_id: str) -> dict | None:
    """The job, or None while the service cannot answer (a killed ingress, a restart)."""
    try:
        response = client.get(f"{ASYNC}/{job_id}")
    except httpx.HTTPError:
        return None
    if response.status_code == 404:
        return {"status": "lost"}
    return response.json() if response.status_code == 200 else None


def wait_until_under_way(client: httpx.Client, job_ids: list[str], timeout_s: float) -> None:
    """Until some job has made progress, so that chunks are in flight when the fault strikes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any((job := poll(client, job_id)) and job.get("progress", 0) > 0.05 for job_id in job_ids):
            return
        time.sleep(0.2)


def wait_for_all(client: httpx.Client, job_ids: list[str], timeout_s: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    states = dict.fromkeys(job_ids, "in_progress")
    while time.monotonic() < deadline and "in_progress" in states.values():
        for job_id in [job_id for job_id, state in states.items() if state == "in_progress"]:
            if (job := poll(client, job_id)) is not None:
                states[job_id] = job["status"]
        time.sleep(0.5)
    return {job_id: "lost" if state == "in_progress" else state for job_id, state in states.items()}


def charges_of(storage: dict, key: str) -> dict[str, float]:
    """Each charge to `key`: its charge id (a job's id) and audio seconds, from the usage ledger's table through
    the storage layer, so that it reads the service's database whichever it is (SQLite or PostgreSQL)."""
    engine = database_engine(StorageConfig(**storage), reading=True)
    try:
        with engine.connect() as connection:
            query = select(charges.c.charge_id, charges.c.audio_seconds).where(charges.c.owner == owner_of(key))
            return {charge_id: seconds for charge_id, seconds in connection.execute(query)}
    finally:
        engine.dispose()


def charged_twice_s(storage: dict, key: str, job_ids: list[str]) -> float:
    """Audio seconds charged to `key` beyond one charge per job (charge ids are unique: one row per job at most)."""
    charged = charges_of(storage, key)
    once_each = sum(seconds for charge_id, seconds in charged.items() if charge_id in set(job_ids))
    return round(sum(charged.values()) - once_each, 3)


def run_fault(service: LocalService, fault: str, audio: bytes, jobs: int, timeout_s: float) -> Outcome:
    def strike() -> int:
        if fault == "restart":
            service.restart()
            return 1
        return kill(service, fault)

    return run_jobs_through(service.base_url, service.storage, fault, strike, audio, jobs, timeout_s)


def lose_node(cluster: LocalCluster, fault: str) -> int:
    """Remove the worker node that holds the job tracker (`tracker-node`), or one that runs a Transcriber
    replica and not the tracker (`node`); returns how many nodes were removed."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        tracker = cluster.node_with("JobTracker")
        if fault == "tracker-node":
            victim = tracker
        else:
            transcribing = cluster.nodes_of("ServeReplica:stt:Transcriber")
            victim = next((n for n in cluster.worker_nodes() if n.node_id in transcribing and n is not tracker), None)
        if victim is not None:
            cluster.remove_node(victim)
            return 1
        time.sleep(0.2)
    return 0


def run_node_fault(cluster: LocalCluster, fault: str, audio: bytes, jobs: int, timeout_s: float) -> Outcome:
    outcome = run_jobs_through(
        cluster.base_url, cluster.storage, fault, lambda: lose_node(cluster, fault), audio, jobs, timeout_s
    )
    cluster.add_worker()  # a lost VM is replaced (by KubeRay's autoscaler, on a real cluster)
    return outcome


def run_jobs_through(
    base_url: str, storage: dict, fault: str, strike: Callable[[], int], audio: bytes, jobs: int, timeout_s: float
) -> Outcome:
    """Submit `jobs` jobs under the fault's own key, `strike` once they are under way, and count their ends."""
    key = f"chaos-{fault.lower()}"
    task = "diarize" if fault == "Diarizer" else "transcribe"
    started = time.monotonic()
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        job_ids = [submit(client, audio, task) for _ in range(jobs)]
        wait_until_under_way(client, job_ids, timeout_s=120)
        killed = strike()
        states = wait_for_all(client, job_ids, timeout_s)
    counts = list(states.values())
    return Outcome(
        fault=fault,
        submitted=jobs,
        completed=counts.count("complete"),
        error=counts.count("error"),
        lost=counts.count("lost"),
        charged_twice_s=charged_twice_s(storage, key, job_ids),
        killed=killed,
        seconds=round(time.monotonic() - started, 1),
    )


def main(
    faults: str = typer.Option(",".join(FAULTS), help="Comma-separated: " + ", ".join(FAULTS)),
    jobs: int = typer.Option(4, help="Jobs submitted before each fault."),
    minutes: float = typer.Option(1.5, help="Length of each job's audio."),
    model: str = typer.Option("embedded:tiny.en", help="The Whisper model the service runs."),
    timeout_s: float = typer.Option(900, help="How long to wait for a fault's jobs before counting them lost."),
    database_url: str = typer.Option(
        "", help="A PostgreSQL database for jobs and charges (password in STT_DATABASE_PASSWORD); default: SQLite."
    ),
) -> None:
    chosen = [fault.strip() for fault in faults.split(",") if fault.strip()]
    if unknown := set(chosen) - set(FAULTS):
        raise typer.BadParameter(f"unknown faults: {', '.join(sorted(unknown))}")
    sample = decode_audio(pyannote_sample()).samples
    repeats = max(1, round(minutes * 60 * 16_000 / len(sample)))
    if minutes * 60 * 16_000 < len(sample) / 2:  # short jobs (the node-loss rows' many): speech from 6 s on
        sample, repeats = sample[SPEECH_FROM : SPEECH_FROM + round(minutes * 60 * 16_000)], 1
    audio = encode(np.tile(sample, repeats), "flac")
    keys = [f"chaos-{fault.lower()}" for fault in FAULTS]
    console = Console(width=150)
    outcomes = []
    minutes_each = len(sample) * repeats / 16_000 / 60
    on_one_node = [fault for fault in chosen if fault not in NODE_FAULTS]
    on_a_cluster = [fault for fault in chosen if fault in NODE_FAULTS]
    storage = {"database_url": database_url} if database_url else {}  # the password: from this environment
    if on_one_node:
        with tempfile.TemporaryDirectory() as workdir:
            service = LocalService(
                Path(workdir), keys, model=model, unthrottled=True, jobs={"retry_interval_s": 2}, storage=storage
            )
            with service:
                for fault in on_one_node:
                    console.print(f"[bold]{fault}[/]: {jobs} jobs of {minutes_each * 60:.0f} s")
                    outcomes.append(run_fault(service, fault, audio, jobs, timeout_s))
                    console.print(outcomes[-1])
    if on_a_cluster:
        with (
            tempfile.TemporaryDirectory() as workdir,
            LocalCluster(Path(workdir), keys, model=model, storage=storage) as cluster,
        ):
            for fault in on_a_cluster:
                console.print(f"[bold]{fault}[/]: {jobs} jobs of {minutes_each * 60:.0f} s, {cluster.workers} workers")
                outcomes.append(run_node_fault(cluster, fault, audio, jobs, timeout_s))
                console.print(outcomes[-1])
    table = Table(title="Jobs under faults (each fault: its own jobs, killed mid-work)")
    columns = ("fault", "killed", "submitted", "completed", "error", "lost", "charged twice (s)", "wall s")
    for column in columns:
        table.add_column(column)
    for o in outcomes:
        table.add_row(o.fault, str(o.killed), str(o.submitted), str(o.completed), str(o.error), str(o.lost),
                      str(o.charged_twice_s), str(o.seconds))  # fmt: skip
    console.print(table)
    bad = [o.fault for o in outcomes if o.error or o.lost or o.charged_twice_s or not o.killed]
    if bad:
        console.print(f"[red]not survived: {', '.join(bad)}[/]")
        raise typer.Exit(1)


if __name__ == "__main__":
    typer.run(main)
