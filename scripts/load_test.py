"""Load test on loopback: several keys at their 10 rps limit plus one key bursting above it, for a bounded
time, against a freshly started local service (two ingress replicas, one shared limiter).

Each steady key polls its jobs and lists models at 10 requests per second and submits a short job every
few seconds; the burst key sends 30 requests per second. At the end every submitted job is polled until it
finishes. Reports requests served, 429s, 5xx (target 0), p99 latency, and whether any job was lost.

    .venv/bin/python -m scripts.load_test [--seconds 60] [--keys 4]
"""

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from deployments.files.decoding import decode_audio
from devkit.jobs import JobClient
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile

ASYNC = "/v1/audio/transcriptions/async"


class Tally:
    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.latencies_ms: list[float] = []
        self.jobs: list[tuple[str, str]] = []  # (key, job id)

    async def request(self, client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
        started = time.perf_counter()
        response = await client.request(method, path, **kwargs)
        self.latencies_ms.append((time.perf_counter() - started) * 1000)
        self.statuses[response.status_code] += 1
        return response


async def steady_key(base_url: str, key: str, rate: float, seconds: float, audio: bytes, tally: Tally) -> None:
    """`rate` requests per second, evenly spaced: mostly polls and model lists, a job every 40 requests."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        started, sent = time.monotonic(), 0
        while time.monotonic() - started < seconds:
            if sent % 40 == 0:
                response = await tally.request(client, "POST", ASYNC, files={"file": ("a.wav", audio)})
                if response.status_code == 200:
                    tally.jobs.append((key, response.json()["job_id"]))
            elif tally.jobs and sent % 2 == 0:
                own = [job_id for owner, job_id in tally.jobs if owner == key]
                await tally.request(client, "GET", f"{ASYNC}/{own[-1]}" if own else "/v1/models")
            else:
                await tally.request(client, "GET", "/v1/models")
            sent += 1
            await asyncio.sleep(max(0.0, started + sent / rate - time.monotonic()))


def wait_for_jobs(base_url: str, jobs: list[tuple[str, str]], timeout_s: float = 600) -> Counter[str]:
    """Poll each job (politely: under the rate limit) until it is no longer in progress."""
    outcome: Counter[str] = Counter()
    deadline = time.monotonic() + timeout_s
    for key, job_id in jobs:
        with JobClient(base_url, key, timeout_s=60) as client:
            status = client.wait(job_id, timeout_s=deadline - time.monotonic(), interval_s=0.2)["status"]
        outcome["still in progress" if status == "in_progress" else status] += 1
    return outcome


async def run(base_url: str, keys: list[str], burst_key: str, seconds: float) -> None:
    audio = encode(decode_audio(pyannote_sample()).samples[6 * 16_000 : 9 * 16_000], "wav")
    steady, burst = Tally(), Tally()
    started = time.monotonic()
    await asyncio.gather(
        *(steady_key(base_url, key, 10, seconds, audio, steady) for key in keys),
        steady_key(base_url, burst_key, 30, seconds, audio, burst),
    )
    elapsed = time.monotonic() - started
    outcome = await asyncio.to_thread(wait_for_jobs, base_url, steady.jobs + burst.jobs)
    for name, tally in [(f"{len(keys)} keys at 10 rps", steady), ("1 key at 30 rps (over its limit)", burst)]:
        served = sum(count for status, count in tally.statuses.items() if status < 400)
        errors = sum(count for status, count in tally.statuses.items() if status >= 500)
        p99 = percentile(tally.latencies_ms, 0.99)
        print(
            f"{name:34s} requests {sum(tally.statuses.values()):6d}  served {served:6d}  429 {tally.statuses[429]:5d}"
            f"  5xx {errors}  p99 {p99:7.1f} ms  over {elapsed:.0f} s"
        )
    submitted = len(steady.jobs) + len(burst.jobs)
    print(f"jobs submitted {submitted}: {dict(outcome)}; lost: {submitted - outcome['complete'] - outcome['error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--keys", type=int, default=4)
    args = parser.parse_args()
    keys = [f"load-key-{index}" for index in range(args.keys)]
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(
            Path(workdir), [*keys, "load-key-burst"], ingress_replicas=2, jobs={"max_concurrent_jobs": 2}
        ) as service,
    ):
        asyncio.run(run(service.base_url, keys, "load-key-burst", args.seconds))


if __name__ == "__main__":
    main()
