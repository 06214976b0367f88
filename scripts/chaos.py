"""Kill what clusters kill, mid-jobs, and count what became of the jobs.

    python -m scripts.chaos                       # every fault, on a local service of its own
    python -m scripts.chaos --faults Transcriber,restart --jobs 4
    python -m scripts.chaos --faults node,tracker-node --jobs 24 --minutes 0.05   # the node-loss rows only

Local only and bounded: it starts the service with `serve run` (devkit/local_service.py) in a temporary
directory, and for each fault submits a batch of asynchronous jobs under a key of the fault's own, waits
until they are under way, then SIGKILLs every process of one replica kind (or the job tracker), or stops
the whole application with Ctrl-C and starts it again. The node-loss faults run on a cluster of several
Ray nodes on this machine (devkit/local_cluster.py: a head and three workers, the Transcriber autoscaled
from zero): `node` removes a worker node running a Transcriber replica (not the tracker's), `tracker-node`
the worker node holding the job tracker's actor, each with every process on it killed at once, as a lost
VM. It then waits for every job and prints, per fault: jobs submitted / completed / error / lost (still
unfinished at the deadline, or unknown to the service), and charged twice (audio seconds charged to the
fault's key beyond the completed jobs' own, read from the usage ledger through the storage layer: SQLite
or PostgreSQL alike).
"""

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from deployments.files.decoding import decode_audio
from devkit.charges import charges_of
from devkit.faults import kill
from devkit.jobs import JobClient
from devkit.local_cluster import LocalCluster
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample

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


def wait_until_under_way(jobs: JobClient, job_ids: list[str], timeout_s: float) -> None:
    """Until some job has made progress, so that chunks are in flight when the fault strikes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any((job := jobs.poll(job_id)) and job.get("progress", 0) > 0.05 for job_id in job_ids):
            return
        time.sleep(0.2)


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
    with JobClient(base_url, key, timeout_s=120) as client:
        job_ids = [client.submit(audio, "speech.flac", task=task)["job_id"] for _ in range(jobs)]
        wait_until_under_way(client, job_ids, timeout_s=120)
        killed = strike()
        states = client.wait_for_all(job_ids, timeout_s)
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
