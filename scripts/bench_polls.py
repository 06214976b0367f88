"""Job polls: latency of GET /v1/audio/transcriptions/async/{id} for one finished job at a steady rate, beside
the baseline GET /v1/models (same proxy, ingress and auth, no job lookup) at the same rate.

Starts a local service (the tiny embedded model), submits a short clip, waits until the job is complete,
then polls it at --rate requests/s for --seconds, with a models list half-way between polls (so that both
see the same machine); prints p50/p95/p99 of each and their ratio (on a shared machine, compare ratios
between runs rather than milliseconds).

    .venv/bin/python -m scripts.bench_polls [--seconds 20] [--rate 10]

With --clients N (issue 36: 32), it measures capacity instead: N clients poll as fast as they are answered
for --seconds, each its own job, for 1 and then 2 ingress replicas (--replicas 1 2), and it prints polls/s,
p50 and p99 per replica count. The jobs are held `in_progress` (the tracker's one worker waits on a URL that
never answers, the others queue behind it, and nothing runs), so no answer is kept by a replica and every
poll reads the job: before issue 36 from the tracker actor, since then from the store. Run it twice on each
side, and for "before" run this file from a checkout of the commit before the change:

    .venv/bin/python -m scripts.bench_polls --clients 32 [--seconds 20] [--replicas 1 2] [--database-url URL]
"""

import argparse
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from deployments.files.decoding import decode_audio
from devkit.jobs import JobClient
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile

KEY = "bench"


def _finished_job(base_url: str) -> str:
    """The id of a completed job, on 5 s of speech."""
    clip = encode(decode_audio(pyannote_sample()).samples[: 5 * 16_000], "wav")
    with JobClient(base_url, KEY, timeout_s=60) as jobs:
        job_id = jobs.submit(clip, "a.wav")["job_id"]
        job = jobs.wait(job_id, timeout_s=120, interval_s=0.2)
    if job["status"] != "complete":
        raise RuntimeError(f"job {job_id} did not complete in 120 s: {job['status']}")
    return job_id


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
    return percentile(values, 0.5), percentile(values, 0.95), percentile(values, 0.99)


@contextmanager
def _silent_server() -> Iterator[str]:
    """A URL on loopback whose server accepts connections and never answers: a job fetching it waits."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/never.mp3"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def _poll_as_fast_as_answered(base_url: str, paths: list[str], seconds: float) -> list[float]:
    """One thread per path, each polling its path back to back for `seconds`; every poll's ms."""
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(path: str) -> None:
        mine: list[float] = []
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as http:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                http.get(path).raise_for_status()
                mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(path,)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def _capacity(clients: int, replicas: int, seconds: float, database_url: str | None) -> tuple[float, float, float]:
    """Polls/s, p50 and p99 (ms) of `clients` clients polling running jobs through `replicas` ingress replicas."""
    storage = {"database_url": database_url} if database_url else None
    with (
        tempfile.TemporaryDirectory() as workdir,
        _silent_server() as never,
        LocalService(
            Path(workdir),
            [KEY],
            unthrottled=True,
            ingress_replicas=replicas,
            storage=storage,
            jobs={"max_concurrent_jobs": 1, "max_running_jobs_per_key": clients + 1},
            url_input={"allowed_networks": ["127.0.0.1/32"], "read_timeout_s": 3600},
        ) as service,  # fmt: skip
        httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as client,
        JobClient(service.base_url, KEY, timeout_s=60) as jobs,
    ):
        ids = [jobs.submit(never)["job_id"] for _ in range(clients + 1)]
        paths = [f"/v1/audio/transcriptions/async/{job_id}" for job_id in ids[1:]]  # the first one runs: it waits
        for path in paths:  # warm every replica's path
            assert client.get(path).json()["status"] == "in_progress"
        latencies = _poll_as_fast_as_answered(service.base_url, paths, seconds)
    return len(latencies) / seconds, percentile(latencies, 0.5), percentile(latencies, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=10)
    parser.add_argument("--clients", type=int, default=0, help="Measure capacity with this many clients (32).")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2], help="Ingress replica counts (capacity).")
    parser.add_argument("--database-url", help="storage.database_url (PostgreSQL; password in STT_DATABASE_PASSWORD).")
    args = parser.parse_args()
    if args.clients:
        print(f"{args.clients} clients polling running jobs for {args.seconds:.0f} s:")
        print(f"{'ingress replicas':>16s} {'polls/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s}")
        for replicas in args.replicas:
            rate, p50, p99 = _capacity(args.clients, replicas, args.seconds, args.database_url)
            print(f"{replicas:16d} {rate:8.0f} {p50:8.1f} {p99:8.1f}")
        return

    with tempfile.TemporaryDirectory() as workdir, LocalService(Path(workdir), [KEY], unthrottled=True) as service:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=service.base_url, headers=headers, timeout=60) as client:
            poll_path = f"/v1/audio/transcriptions/async/{_finished_job(service.base_url)}"
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
