"""Peak memory of every process of the running service while it transcribes a long file: its growth over what
the process held before (warmed up), and the peak itself (what a container must hold).

    .venv/bin/python -m scripts.bench_memory                 # 1 h and 10 h, synchronous and as a job
    .venv/bin/python -m scripts.bench_memory --hours 1       # only 1 h
    .venv/bin/python -m scripts.bench_memory --hours 1 --modes async --model embedded:base --speech-every-s 30

The long file is made here from real speech (pyannote.audio's 30 s sample.wav) every 30 minutes (or every
`--speech-every-s`: 30 is speech throughout, a Transcriber's busiest hour), with silence between, as 16 kHz
FLAC (small, so the upload is not what is measured); nothing is stored. The service runs as users run it
(`serve run` on configs/local.yaml, Whisper tiny.en unless `--model`), warmed up by a 2-minute file in both
modes first. While a request runs, each Serve replica, the job tracker and the proxy is sampled every 0.2 s
(RSS, psutil), and the peak growth over its RSS just before the request is printed per process, with the
machine's used memory (which includes Ray's object store, where a decoded file passed between deployments
lives). The script runs unchanged against an earlier commit of the project (it finds the decoder deployment
under either name), for the side-by-side.
"""

import argparse
import contextlib
import math
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from devkit.jobs import JobClient
from devkit.local_service import LocalService
from devkit.media import make_long_flac

KEY = "bench-memory-key"
SAMPLE_RATE = 16_000
PROCESSES = {
    "Ingress": "ServeReplica:stt:Ingress",
    "Pipeline/decoder": ("ServeReplica:stt:TranscriptionPipeline", "ServeReplica:stt:AudioDecoder"),  # new, old
    "Transcriber": "ServeReplica:stt:Transcriber",
    "Diarizer": "ServeReplica:stt:Diarizer",
    "JobTracker": "ray::JobTracker",
    "Proxy": "ray::ProxyActor",
}
MACHINE = "machine (used memory)"
"""Also sampled: the machine's used memory, which includes Ray's object store (shared memory that no one
process's RSS shows in full)."""


@dataclass
class Sampler:
    """Samples the RSS of the service's processes in a thread; peak growth over the baseline per name."""

    processes: dict[str, list[psutil.Process]]
    baseline: dict[str, int] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)
    running: bool = True

    def rss(self, name: str) -> int:
        if name == MACHINE:  # everything, the object store's shared memory included
            memory = psutil.virtual_memory()
            return memory.total - memory.available
        total = 0
        for process in self.processes[name]:
            with contextlib.suppress(psutil.Error):  # a process that ended since
                total += process.memory_info().rss
        return total

    def names(self) -> list[str]:
        return [*self.processes, MACHINE]

    def __enter__(self) -> "Sampler":
        self.baseline = {name: self.rss(name) for name in self.names()}
        self.peak = dict(self.baseline)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        while self.running:
            for name in self.names():
                self.peak[name] = max(self.peak[name], self.rss(name))
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()

    def growth_mb(self) -> dict[str, float]:
        return {name: (self.peak[name] - self.baseline[name]) / 1e6 for name in self.names()}


def find_processes() -> dict[str, list[psutil.Process]]:
    found: dict[str, list[psutil.Process]] = {name: [] for name in PROCESSES}
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        for name, patterns in PROCESSES.items():
            patterns = (patterns,) if isinstance(patterns, str) else patterns
            if any(pattern in command for pattern in patterns):
                found[name].append(process)
    return found


def run_sync(client: httpx.Client, path: Path) -> float:
    with path.open("rb") as audio:
        response = client.post("/v1/audio/transcriptions", files={"file": (path.name, audio)}, data={"language": "en"})
    response.raise_for_status()
    return len(response.json()["text"])


def run_job(client: httpx.Client, path: Path) -> float:
    with JobClient(str(client.base_url), KEY, timeout_s=7200) as jobs:
        job = jobs.wait(jobs.submit(str(path), language="en")["job_id"], timeout_s=math.inf, interval_s=1)
    if job["status"] != "complete":
        raise RuntimeError(f"job failed: {job.get('error') or job['status']}")
    return len(job["result"]["text"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--label", default="this commit", help="Names the code measured, in the table.")
    parser.add_argument("--model", default="embedded:tiny.en", help="The Whisper model (embedded:base: the default's).")
    parser.add_argument(
        "--speech-every-s", type=float, default=1800.0, help="30: speech throughout (the call, over and over)"
    )
    parser.add_argument(
        "--budget-mb", type=int, default=None, help="whisper.max_batch_memory_mb (default: the config's)"
    )
    parser.add_argument("--modes", nargs="+", choices=["sync", "async"], default=["sync", "async"])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        files = {}
        for hours in args.hours:
            files[hours] = workdir / f"long-{hours:g}h.flac"
            started = time.perf_counter()
            make_long_flac(files[hours], min(hours, 9.99) if hours >= 10 else hours, args.speech_every_s)  # < 10 h
            size_mb = files[hours].stat().st_size / 1e6
            print(f"made {files[hours].name}: {size_mb:.1f} MB in {time.perf_counter() - started:.0f} s", flush=True)
        limits = {"max_sync_upload_bytes": 2 * 1024**3}
        whisper = {} if args.budget_mb is None else {"max_batch_memory_mb": args.budget_mb}
        with LocalService(
            workdir, [KEY], model=args.model, limits=limits, unthrottled=True, whisper=whisper
        ) as service:
            client = httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=7200)
            processes = find_processes()
            print("processes:", {name: [p.pid for p in found] for name, found in processes.items()}, flush=True)
            warm_up = workdir / "warm-up.flac"  # first requests load models and thread pools: not measured
            make_long_flac(warm_up, hours=120 / 3600)
            run_sync(client, warm_up)
            run_job(client, warm_up)
            for hours, path in files.items():
                for mode, run in ((mode, {"sync": run_sync, "async": run_job}[mode]) for mode in args.modes):
                    time.sleep(3)  # let the previous request's memory settle
                    started = time.perf_counter()
                    with Sampler(processes) as sampler:
                        run(client, path)
                    seconds = time.perf_counter() - started
                    growth = sampler.growth_mb()
                    rows.append((f"{hours:g} h", mode, seconds, growth))
                    cells = "  ".join(f"{name} {mb:+.0f}" for name, mb in growth.items())
                    print(f"{hours:g} h {mode}: {seconds:.0f} s; peak RSS growth, MB: {cells}", flush=True)
                    held = "  ".join(  # what a container must hold: the peak itself, and what was held before
                        f"{name} {sampler.peak[name] / 1e6:.0f} ({sampler.baseline[name] / 1e6:.0f} before)"
                        for name in processes
                    )
                    print(f"  peak RSS, MB: {held}", flush=True)
    print(f"\nPeak RSS growth per process, MB ({args.label}; Whisper {args.model}, 2-core machine)")
    names = [*PROCESSES, MACHINE]
    print("| input | mode | seconds | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for label, mode, seconds, growth in rows:
        print(f"| {label} | {mode} | {seconds:.0f} | " + " | ".join(f"{growth[name]:+.0f}" for name in names) + " |")


if __name__ == "__main__":
    main()
