"""Interactive latency during a backfill: how long a synchronous request waits behind hundreds of jobs.

With one lane for every chunk (the baseline: a synchronous request's chunk queues behind the jobs'), then
with the interactive lane (the default: such chunks are batched apart and decoded beside the jobs'), in
one run and on a freshly started local service each:
1. alone: a synchronous 11 s request on the idle service (one warm-up, then the best of --alone-runs);
2. backfill: --short-jobs jobs of 7 s under one key and --long-jobs jobs of --long-minutes under another;
3. during it: --probes synchronous 11 s requests one after another, each timed; the ratio to alone.
The service is stopped with its backfill still running (what is left of it is not the point).

    .venv/bin/python -m scripts.bench_priority [--model embedded:base] [--short-jobs 200] [--long-jobs 2]
"""

import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
USER, BACKFILL, LONG = "bench-user", "bench-backfill", "bench-long"


def _timed_request(client: httpx.Client, audio: bytes) -> float:
    started = time.perf_counter()
    response = client.post(SYNC, files={"file": ("probe.wav", audio)}, headers=_auth(USER))
    response.raise_for_status()
    return time.perf_counter() - started


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _submit(client: httpx.Client, key: str, audio: bytes, name: str) -> None:
    client.post(ASYNC, files={"file": (name, audio)}, headers=_auth(key)).raise_for_status()


def measure(
    interactive_lane: bool,
    model: str,
    short_jobs: int,
    long_jobs: int,
    long_minutes: float,
    probes: int,
    alone_runs: int,
) -> dict:
    sample = decode_audio(pyannote_sample()).samples
    probe = encode(sample[: 11 * 16_000], "wav")
    short = encode(sample[6 * 16_000 : 13 * 16_000], "wav")
    long = encode(np.tile(sample, max(1, round(long_minutes * 60 * 16_000 / len(sample)))), "flac")
    with tempfile.TemporaryDirectory() as workdir:
        service = LocalService(
            Path(workdir),
            [USER, BACKFILL, LONG],
            model=model,
            unthrottled=True,
            jobs={"max_running_jobs_per_key": max(short_jobs, long_jobs, 1)},
            batching={"interactive_lane": interactive_lane},
        )
        with service, httpx.Client(base_url=service.base_url, timeout=900) as client:
            _timed_request(client, probe)  # warm-up
            alone = min(_timed_request(client, probe) for _ in range(alone_runs))
            with ThreadPoolExecutor(8) as pool:  # the long jobs first: their chunks fill the queue
                list(pool.map(lambda n: _submit(client, LONG, long, f"long{n}.flac"), range(long_jobs)))
                list(pool.map(lambda n: _submit(client, BACKFILL, short, f"short{n}.wav"), range(short_jobs)))
            time.sleep(10)  # the backfill under way: batches full, chunks queued
            during = [_timed_request(client, probe) for _ in range(probes)]
    return {
        "interactive_lane": interactive_lane,
        "alone": alone,
        "during": during,
        "median_ratio": statistics.median(during) / alone,
        "max_ratio": max(during) / alone,
    }


def main(
    model: str = typer.Option("embedded:base", help="The Whisper model (the local config's is base)."),
    short_jobs: int = typer.Option(200),
    long_jobs: int = typer.Option(2),
    long_minutes: float = typer.Option(30.0),
    probes: int = typer.Option(5, help="Synchronous requests timed during the backfill."),
    alone_runs: int = typer.Option(3),
) -> None:
    console = Console(width=150)
    rows = []
    for interactive_lane in (False, True):
        console.print(f"interactive lane {interactive_lane}: starting a service, then the backfill ...")
        rows.append(measure(interactive_lane, model, short_jobs, long_jobs, long_minutes, probes, alone_runs))
        console.print(rows[-1])
    table = Table(title=f"A synchronous 11 s request during a backfill ({short_jobs} x 7 s + {long_jobs} x "
                  f"{long_minutes:g} min jobs), {model}")  # fmt: skip
    for column in ("Transcriber", "alone s", "during: median s", "max s", "median / alone", "max / alone"):
        table.add_column(column)
    for row in rows:
        label = "interactive lane (default)" if row["interactive_lane"] else "one lane (baseline)"
        during = row["during"]
        table.add_row(label, f"{row['alone']:.2f}", f"{statistics.median(during):.2f}", f"{max(during):.2f}",
                      f"{row['median_ratio']:.2f}x", f"{row['max_ratio']:.2f}x")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
