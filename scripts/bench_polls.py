"""Job polls: latency of GET /v1/audio/transcriptions/async/{id} for one finished job at a steady rate, beside
the baseline GET /v1/models (same proxy, ingress and auth, no job lookup) at the same rate.

Starts a local service (the tiny embedded model), submits a short clip, waits until the job is complete,
then polls it at --rate requests/s for --seconds, with a models list half-way between polls (so that both
see the same machine); prints p50/p95/p99 of each and their ratio (on a shared machine, compare ratios
between runs rather than milliseconds).

    .venv/bin/python -m scripts.bench_polls [--seconds 20] [--rate 10]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from deployments.files._decode import decode_audio
from scripts.local_service import LocalService
from tests.media import encode, pyannote_sample

KEY = "bench"


def _finished_job(client: httpx.Client) -> str:
    """The id of a completed job, on 5 s of speech."""
    clip = encode(decode_audio(pyannote_sample()).samples[: 5 * 16_000], "wav")
    job_id = client.post("/v1/audio/transcriptions/async", files={"file": ("a.wav", clip)}).json()["job_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.get(f"/v1/audio/transcriptions/async/{job_id}").json()["status"] == "complete":
            return job_id
        time.sleep(0.2)
    raise RuntimeError(f"job {job_id} did not complete in 120 s")


def _interleaved_latencies(client: httpx.Client, paths: list[str], rate: float, seconds: float) -> list[list[float]]:
    """Each path at `rate` requests/s, their requests evenly spaced between each other; ms per request."""
    latencies: list[list[float]] = [[] for _ in paths]
    interval = 1.0 / rate / len(paths)
    next_at = time.perf_counter()
    for n in range(int(seconds * rate) * len(paths)):
        time.sleep(max(0.0, next_at - time.perf_counter()))
        started = time.perf_counter()
        client.get(paths[n % len(paths)]).raise_for_status()
        latencies[n % len(paths)].append((time.perf_counter() - started) * 1000)
        next_at += interval
    return latencies


def _percentiles(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), float(np.percentile(values, 95)), float(np.percentile(values, 99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir, LocalService(Path(workdir), [KEY], unthrottled=True) as service:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=service.base_url, headers=headers, timeout=60) as client:
            poll_path = f"/v1/audio/transcriptions/async/{_finished_job(client)}"
            for _ in range(5):  # warm both paths
                client.get(poll_path).raise_for_status()
                client.get("/v1/models").raise_for_status()
            polls, models = _interleaved_latencies(client, [poll_path, "/v1/models"], args.rate, args.seconds)

    print(f"{args.rate:.0f} requests/s for {args.seconds:.0f} s each ({len(polls)} and {len(models)} requests), ms:")
    print(f"{'':34s} {'p50':>8s} {'p95':>8s} {'p99':>8s}")
    rows = {"GET async/{job_id} (complete)": _percentiles(polls), "baseline GET /v1/models": _percentiles(models)}
    for name, values in rows.items():
        print(f"{name:34s} " + " ".join(f"{value:8.1f}" for value in values))
    poll, model = rows.values()
    print(f"{'ratio poll / baseline':34s} " + " ".join(f"{p / m:8.2f}" for p, m in zip(poll, model, strict=True)))


if __name__ == "__main__":
    main()
