"""Asynchronous jobs: polling latency at a steady 10 requests/s, and ingress memory during a large upload.

All against a freshly started local service, in one run:
1. polling: GET /v1/audio/transcriptions/async/{id} at 10 rps for --seconds, beside the baseline
   GET /v1/models (same ingress and auth, no tracker call) at the same rate; p50/p99 of each and ratios.
2. memory: a generated WAV of --upload-gb GB streamed to POST /v1/audio/transcriptions/async, once paced at
   --network-mb-s (a fast internet uplink) and once as fast as loopback allows; the peak RSS growth of the
   Ingress replica and of Serve's HTTP proxy while it arrives.

    .venv/bin/python -m scripts.bench_jobs [--seconds 20] [--upload-gb 1.0] [--network-mb-s 50]
"""

import argparse
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import numpy as np
import psutil

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile

KEY = "bench"


def _paced_latencies(client: httpx.Client, path: str, rate: float, seconds: float) -> list[float]:
    latencies, interval = [], 1.0 / rate
    next_at = time.perf_counter()
    end = next_at + seconds
    while next_at < end:
        time.sleep(max(0.0, next_at - time.perf_counter()))
        started = time.perf_counter()
        client.get(path).raise_for_status()
        latencies.append((time.perf_counter() - started) * 1000)
        next_at += interval
    return latencies


def _write_wav(path: Path, speech: np.ndarray, gigabytes: float) -> int:
    """A 16 kHz mono 16-bit WAV of real speech repeated to the given size, written in chunks."""
    pcm = (np.clip(speech, -1, 1) * 32767).astype("<i2").tobytes()
    data_bytes = int(gigabytes * 1024**3) // len(pcm) * len(pcm)
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    with path.open("wb") as out:
        out.write(b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVEfmt " + fmt + b"data")
        out.write(struct.pack("<I", data_bytes))
        for _ in range(data_bytes // len(pcm)):
            out.write(pcm)
    return path.stat().st_size


class _PacedFile:
    """A file whose reads are paced to `bytes_per_s`, as if it came over a network of that speed."""

    def __init__(self, file: BinaryIO, bytes_per_s: float) -> None:
        self.file, self.bytes_per_s = file, bytes_per_s
        self.sent, self.started = 0, time.perf_counter()

    def read(self, size: int = -1) -> bytes:
        chunk = self.file.read(size)
        self.sent += len(chunk)
        time.sleep(max(0.0, self.started + self.sent / self.bytes_per_s - time.perf_counter()))
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)  # fileno, seek, tell: httpx uses them to find the length


def _process(title: str) -> psutil.Process:
    for process in psutil.process_iter(["cmdline"]):
        if any(title in part for part in process.info["cmdline"] or []):
            return process
    raise RuntimeError(f"no process titled {title!r}")


def _peak_rss_growth(processes: dict[str, psutil.Process], work: Callable[[], object]) -> dict[str, float]:
    base = {name: p.memory_info().rss for name, p in processes.items()}
    peak = dict(base)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for name, p in processes.items():
                peak[name] = max(peak[name], p.memory_info().rss)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        work()
    finally:
        done.set()
        sampler.join()
    return {name: (peak[name] - base[name]) / 1024**2 for name in processes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--upload-gb", type=float, default=1.0)
    parser.add_argument("--network-mb-s", type=float, default=50.0)
    args = parser.parse_args()
    speech = decode_audio(pyannote_sample()).samples

    with tempfile.TemporaryDirectory() as workdir, LocalService(Path(workdir), [KEY], unthrottled=True) as service:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=service.base_url, headers=headers, timeout=600) as client:
            clip = encode(speech[: 5 * 16_000], "wav")
            job_id = client.post("/v1/audio/transcriptions/async", files={"file": ("a.wav", clip)}).json()["job_id"]
            poll_path = f"/v1/audio/transcriptions/async/{job_id}"
            for _ in range(3):  # warm both paths
                client.get(poll_path)
                client.get("/v1/models")
            polls = _paced_latencies(client, poll_path, 10, args.seconds)
            models = _paced_latencies(client, "/v1/models", 10, args.seconds)

            big = Path(workdir) / "big.wav"
            size = _write_wav(big, speech, args.upload_gb)
            processes = {"Ingress replica": _process("ServeReplica:stt:Ingress"), "HTTP proxy": _process("ProxyActor")}

            uploads = {}
            for name, rate in [
                (f"paced at {args.network_mb_s:.0f} MB/s", args.network_mb_s),  # first: a clean heap
                ("loopback, unpaced", None),
            ]:

                def upload(rate: float | None = rate) -> None:
                    with big.open("rb") as file:
                        body = file if rate is None else _PacedFile(file, rate * 1024**2)
                        response = client.post(
                            "/v1/audio/transcriptions/async",
                            files={"file": ("big.wav", body)},  # type: ignore[dict-item]  # _PacedFile: the read() httpx calls
                        )
                        response.raise_for_status()

                started = time.perf_counter()
                growth = _peak_rss_growth(processes, upload)
                uploads[name] = (time.perf_counter() - started, growth)

    print(f"polling at 10 rps for {args.seconds:.0f} s each ({len(polls)} and {len(models)} requests), ms:")
    print(f"{'':34s} {'p50':>8s} {'p99':>8s}")
    for name, values in [("GET async/{job_id}", polls), ("baseline GET /v1/models", models)]:
        print(f"{name:34s} {percentile(values, 0.5):8.1f} {percentile(values, 0.99):8.1f}")
    p50_ratio = percentile(polls, 0.5) / percentile(models, 0.5)
    p99_ratio = percentile(polls, 0.99) / percentile(models, 0.99)
    print(f"{'ratio job poll / baseline':34s} {p50_ratio:8.2f} {p99_ratio:8.2f}")
    print(f"\nupload of {size / 1024**3:.2f} GB; peak RSS growth while it arrived, MB:")
    print(f"{'':34s} {'seconds':>8s} {'ingress':>8s} {'proxy':>8s}")
    for name, (seconds, growth) in uploads.items():
        print(f"{name:34s} {seconds:8.1f} {growth['Ingress replica']:8.1f} {growth['HTTP proxy']:8.1f}")


if __name__ == "__main__":
    main()
