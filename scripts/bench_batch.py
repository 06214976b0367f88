"""Bulk transcription: `stt batch` (Ray Data) against the same files as async jobs through the running service and
against faster-whisper's `BatchedInferencePipeline` alone over the files in one process (issue 49).

The files: --files recordings of --seconds each (default 30 x 60 s = 30 min), each real speech cut from the audio
at hand, cycled (jfk.flac and the AMI excerpts of ../shared when present, and the two-speaker call that
pyannote.audio ships), 1 s of silence between clips. One after another, never at once (they share the CPU):
1. the engine alone: `BatchedInferencePipeline` on the same WhisperModel (CTranslate2, the config's weights and
   beam size), batch size the config's Transcriber max_batch_size x lane_batches, every file in turn;
2. `python -m serve_app.batch` (what `stt batch` runs) on the service's config, its Ray started and stopped by it
   (its wall time includes that start: a user's run does);
3. the service (`serve run` of the same config), every file submitted as an async job at once (the jobs' own
   concurrency caps apply), timed from the first upload to the last job's end (the service's start not counted).
Audio seconds per wall second for each and the ratios: batch / jobs, batch / engine alone.

    .venv/bin/python -m scripts.bench_batch [--model embedded:base] [--files 30] [--seconds 60] [--skip-jobs]
        [--batch-options "..."] [--baseline-options "..."]   # the baseline: a second `stt batch` row, same files

`--memory` measures instead what a batch holds: the peak resident memory (RSS, sampled every 0.2 s) of the driver
and of each kind of Ray process (decoding tasks, engine actors, the assembling actor, Ray's own) while
`python -m serve_app.batch` transcribes one long file of --memory-seconds (default 1 h), against the same audio
as short files of --seconds each. Memory bounded by the streaming window: the long file's peaks about the short
files'.

    .venv/bin/python -m scripts.bench_batch --memory [--model embedded:tiny.en] [--memory-seconds 3600]

`--listing N` measures the driver's listing alone (no Ray): N empty files in folders of 1,000, listed, planned and
checked against OUTPUT's markers into the driver's journal as `stt batch` does, against the same as lists (the
listing before it streamed); the peak of Python's allocations (tracemalloc) and the seconds of each.

    .venv/bin/python -m scripts.bench_batch --listing 100000
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import psutil
import yaml
from faster_whisper import BatchedInferencePipeline

from deployments.batch.inputs import iter_inputs, list_inputs
from deployments.batch.journal import Journal
from deployments.batch.outputs import OutputFolder
from deployments.batch.resume import Resume
from deployments.config import BatchingConfig, WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE
from devkit.jobs import JobClient
from devkit.local_service import LocalService
from devkit.media import SHARED_AUDIO, encode, pyannote_sample
from serve_app.batch.plan import plan, plan_each

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-batch"
BEFORE_FUSION = "--decode-cpus 0.5"
"""`stt batch`'s defaults on CPUs before decoding ran inside the engine actors (2026-12-07): the baseline row."""
SHARED = ("jfk.flac", "dev00.wav", "dev01.wav", *(f"trn0{i}.wav" for i in range(3, 10)))


def sources() -> list[np.ndarray]:
    clips = [decode_audio(pyannote_sample()).samples]
    clips += [decode_audio(SHARED_AUDIO / name).samples for name in SHARED if (SHARED_AUDIO / name).exists()]
    return clips


def build_files(folder: Path, count: int, seconds: float, clips: list[np.ndarray] | None = None) -> float:
    """`count` WAV files of `seconds` each, their clips (`sources()` by default) cycled from a different start per
    file; total seconds."""
    clips, silence = clips or sources(), np.zeros(SAMPLE_RATE, dtype=np.float32)
    total = 0.0
    for index in range(count):
        pieces, length, turn = [], 0, index
        while length < seconds * SAMPLE_RATE:
            clip = clips[turn % len(clips)]
            pieces += [clip, silence]
            length += len(clip) + len(silence)
            turn += 1
        samples = np.concatenate(pieces)[: int(seconds * SAMPLE_RATE)]
        (folder / f"file{index:03d}.wav").write_bytes(encode(samples, "wav"))
        total += len(samples) / SAMPLE_RATE
    return total


def engine_alone(files: list[Path], whisper: WhisperModelConfig, batch_size: int) -> float:
    """Wall seconds of BatchedInferencePipeline over every file in turn (the model loaded before the clock)."""
    model = CTranslate2Engine(whisper).model
    pipeline = BatchedInferencePipeline(model)
    started = time.perf_counter()
    for path in files:
        segments, _ = pipeline.transcribe(
            decode_audio(path).samples, beam_size=whisper.beam_size, batch_size=batch_size, vad_filter=True
        )
        "".join(segment.text for segment in segments)  # a generator: the work happens here
    return time.perf_counter() - started


def stt_batch(folder: Path, output: Path, config: Path, options: list[str]) -> tuple[float, float]:
    """Wall seconds of the command with these options, and when its first output was written (s from its start)."""
    started, clock = time.perf_counter(), time.time()
    command = [sys.executable, "-m", "serve_app.batch", str(folder), str(output), "--config", str(config), *options]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-3000:])
    last = [line for line in run.stderr.splitlines() if line.startswith("[")][-1]
    print(f"stt batch's own last progress line (Ray started, actors up): {last}", flush=True)
    lines = (output / "_manifest.jsonl").read_text().splitlines()
    assert len(lines) == len(list(folder.glob("*.wav"))) and all('"ok"' in line for line in lines), lines[:3]
    first = min(path.stat().st_mtime for path in output.glob("*.json")) - clock
    return wall, first


class PeakMemory:
    """Peak RSS per kind of process in a process's tree (the batch's driver, its Ray and Ray's workers), sampled."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peaks: dict[str, float] = {}
        self.total = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stop.wait(0.2):
            try:
                processes = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            now: dict[str, float] = {}
            for process in processes:
                try:
                    kind = "driver" if process.pid == self.root.pid else _kind(process)
                    now[kind] = now.get(kind, 0.0) + process.memory_info().rss / 2**20
                except psutil.Error:
                    continue
            for kind, mib in now.items():
                self.peaks[kind] = max(self.peaks.get(kind, 0.0), mib)
            self.total = max(self.total, sum(now.values()))

    def finish(self) -> dict[str, float]:
        self.stop.set()
        self.thread.join()
        return self.peaks


def _kind(process: psutil.Process) -> str:
    """A Ray worker by what it runs now (its title, `ray::<actor or task>`), else its program's name."""
    title = " ".join(process.cmdline())
    for stage in ("ChunkTranscriber", "FileAssembler", "SpeakerFinder", "decode_parts", "ReadText"):
        if stage in title:
            return stage
    return "idle Ray workers" if title.startswith("ray::") else f"Ray itself ({process.name()})"


def batch_memory(folder: Path, output: Path, config: Path, options: list[str]) -> tuple[float, dict[str, float], float]:
    """Wall seconds, peak RSS (MiB) per kind of process and the tree's peak in all, of one `stt batch`."""
    command = [sys.executable, "-m", "serve_app.batch", str(folder), str(output), "--config", str(config), *options]
    started = time.perf_counter()
    run = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True)
    peak = PeakMemory(run.pid)
    _, stderr = run.communicate()
    wall = time.perf_counter() - started
    peaks = peak.finish()
    if run.returncode != 0:
        raise RuntimeError(stderr[-3000:])
    lines = (output / "_manifest.jsonl").read_text().splitlines()
    assert all('"ok"' in line for line in lines), lines[:3]
    return wall, peaks, peak.total


def batch_runs(args: argparse.Namespace) -> dict[str, str]:
    """`stt batch`'s runs by their label's suffix: its defaults (or --batch-options), then the baseline's options."""
    baseline = {f" ({args.baseline_options})": args.baseline_options} if args.baseline_options else {}
    return {"": args.batch_options} | baseline


def memory(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as temporary:
        workdir = Path(temporary)
        long, short = workdir / "long", workdir / "short"
        long.mkdir()
        short.mkdir()
        audio_s = build_files(long, 1, args.memory_seconds)
        build_files(short, max(1, round(args.memory_seconds / args.seconds)), args.seconds)
        (workdir / "service").mkdir()
        service = LocalService(workdir / "service", [KEY], model=args.model, unthrottled=True)
        config = workdir / "config.yaml"
        config.write_text(yaml.safe_dump(service.config()))
        print(f"{audio_s / 60:.0f} min of audio; model {args.model}, {os.cpu_count()} CPUs", flush=True)
        results = {}
        runs = batch_runs(args)
        for label, folder in ((f"1 file of {audio_s / 60:.0f} min", long), (f"{len(list(short.iterdir()))} files of"
                              f" {args.seconds:.0f} s", short)):  # fmt: skip
            for index, (suffix, options) in enumerate(runs.items()):
                output = workdir / f"out-{folder.name}-{index}"
                results[label + suffix] = batch_memory(folder, output, config, options.split())
                print(f"{label + suffix}: {results[label + suffix][0]:.0f} s, peaks {results[label + suffix][1]}",
                      flush=True)  # fmt: skip
    kinds = sorted({kind for _, peaks, _ in results.values() for kind in peaks})
    print("\n| input | wall s | audio s / wall s | tree's peak MiB | " + " | ".join(kinds) + " |")
    print("|---" * (4 + len(kinds)) + "|")
    for label, (wall, peaks, total) in results.items():
        cells = " | ".join(f"{peaks.get(kind, 0):.0f}" for kind in kinds)
        print(f"| {label} | {wall:.0f} | {audio_s / wall:.1f} | {total:.0f} | {cells} |")


def listing(count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-listing-") as temporary:
        root, output = Path(temporary) / "in", OutputFolder(str(Path(temporary) / "out"))
        for index in range(count):
            folder = root / f"d{index // 1000:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{index:06d}.wav").touch()
        tracemalloc.start()
        started, journal = time.perf_counter(), Journal()
        todo = journal.list(plan_each(iter_inputs(str(root)), ["json", "srt"], "transcribe", None, False),
                            Resume(output, retry_errors=False))  # fmt: skip
        print(f"streamed into the journal: {todo} tasks, peak {tracemalloc.get_traced_memory()[1] / 1e6:.1f} MB,"
              f" {time.perf_counter() - started:.0f} s")  # fmt: skip
        journal.remove()
        tracemalloc.reset_peak()
        started = time.perf_counter()
        tasks = plan(list_inputs(str(root)), ["json", "srt"], "transcribe", None, False)
        print(f"as lists: {len(tasks)} tasks, peak {tracemalloc.get_traced_memory()[1] / 1e6:.1f} MB,"
              f" {time.perf_counter() - started:.0f} s")  # fmt: skip


def jobs(service: LocalService, files: list[Path]) -> float:
    with JobClient(service.base_url, KEY, timeout_s=600) as client:
        started = time.perf_counter()
        ids = [client.submit(path.read_bytes(), path.name)["job_id"] for path in files]
        states = client.wait_for_all(ids, timeout_s=7200, interval_s=1.0)
        wall = time.perf_counter() - started
    assert set(states.values()) == {"complete"}, states
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch-options", default="", help="Options for `stt batch` (its defaults without).")
    parser.add_argument(
        "--baseline-options",
        default=BEFORE_FUSION,
        help="Options of a second `stt batch` row, the baseline (empty: none); default: the design before decoding"
        " ran in the engine actors on CPUs.",
    )
    parser.add_argument("--skip-jobs", action="store_true")
    parser.add_argument("--memory", action="store_true", help="Peak memory: one long file against short ones.")
    parser.add_argument("--memory-seconds", type=float, default=3600)
    parser.add_argument("--listing", type=int, help="The driver's memory while listing this many inputs (no Ray).")
    args = parser.parse_args()
    if args.listing:
        listing(args.listing)
        return
    if args.memory:
        memory(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as temporary:
        workdir = Path(temporary)
        folder = workdir / "in"
        folder.mkdir()
        audio_s = build_files(folder, args.files, args.seconds)
        files = sorted(folder.glob("*.wav"))
        (workdir / "service").mkdir()
        service = LocalService(workdir / "service", [KEY], model=args.model, unthrottled=True,
                               jobs={"max_running_jobs_per_key": 1000})  # fmt: skip
        config = workdir / "service" / "config.yaml"
        config.write_text(yaml.safe_dump(service.config()))
        serve_config = yaml.safe_load(config.read_text())
        application = serve_config["applications"][0]
        whisper = WhisperModelConfig.model_validate(application["args"]["whisper"])
        transcriber = next(d for d in application["deployments"] if d["name"] == "Transcriber")
        batching = BatchingConfig.model_validate(transcriber.get("user_config", {}))
        print(f"{len(files)} files, {audio_s / 60:.1f} min of audio; model {whisper.model}, {os.cpu_count()} CPUs")
        walls = {}
        engine = whisper.model_copy(update={"cpu_threads": os.cpu_count() or 1})  # alone: every core is its own
        walls["engine alone (BatchedInferencePipeline)"] = engine_alone(
            files, engine, batching.max_batch_size * batching.lane_batches
        )
        print(f"engine alone: {walls['engine alone (BatchedInferencePipeline)']:.1f} s", flush=True)
        firsts = {}
        runs = {f"stt batch (Ray Data){suffix}": options for suffix, options in batch_runs(args).items()}
        for index, (label, options) in enumerate(runs.items()):
            walls[label], firsts[label] = stt_batch(folder, workdir / f"out{index}", config, options.split())
            print(f"{label}: {walls[label]:.1f} s, its first output after {firsts[label]:.1f} s", flush=True)
        if not args.skip_jobs:
            with service:
                walls["async jobs (the service)"] = jobs(service, files)
            print(f"jobs: {walls['async jobs (the service)']:.1f} s", flush=True)
    print("\n| path | wall s | audio s / wall s | first output after |\n|---|---|---|---|")
    for label, wall in walls.items():
        first = f"{firsts[label]:.1f} s" if label in firsts else ""
        print(f"| {label} | {wall:.1f} | {audio_s / wall:.2f} | {first} |")
    batch = audio_s / walls["stt batch (Ray Data)"]
    print(f"\nbatch / engine alone: {batch / (audio_s / walls['engine alone (BatchedInferencePipeline)']):.2f}x")
    if "async jobs (the service)" in walls:
        print(f"batch / jobs: {batch / (audio_s / walls['async jobs (the service)']):.2f}x")
    for label in list(runs)[1:]:
        print(f"batch / {label}: {walls[label] / walls['stt batch (Ray Data)']:.2f}x")


if __name__ == "__main__":
    main()
