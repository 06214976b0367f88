"""The Transcriber's engine under the allocator settings of its process (issue 63): peak and retained memory, speed.

CTranslate2 on an Intel CPU allocates through MKL, whose fast memory manager keeps what each thread freed for that
thread; glibc gives each thread a heap of its own. A batch's activations (hundreds of MB) freed by one thread are
then not what the next batch on another thread reuses, and the process holds the sum. Each setting runs in a child
process of its own (the environment is read when the libraries load): Whisper base int8 as `configs/local.yaml`
loads it (one thread a batch), --lanes threads each transcribing --rounds batches of --batch-size chunks of 29 s
of real speech (beam 5; `--words`: word timestamps, as a job's chunks are read), and it prints the peak RSS over
the loaded model, what is still held a second after the last batch, and audio seconds per second. `default` is
the baseline (no setting); run the settings alternately, twice each (`--settings default,service,default,service`).
`--encoder-batches 64,1` runs each setting with the encoder reading a batch whole (64: the code before issue 63's
one-chunk encoder) and one chunk at a time (`whisper.encoder_batch_size`, the default on a CPU).

    .venv/bin/python -m scripts.bench_allocator [--settings default,service,mkl,arena,mmap] [--lanes 2]
        [--batch-size 2] [--rounds 6] [--words] [--encoder-batches 1]
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "service": {"MKL_DISABLE_FAST_MM": "1", "MALLOC_ARENA_MAX": "2"},  # the Transcriber's, configs/local.yaml
    "mkl": {"MKL_DISABLE_FAST_MM": "1"},
    "arena": {"MALLOC_ARENA_MAX": "2"},
    "mmap": {"MKL_DISABLE_FAST_MM": "1", "MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"},
}
CHUNK_S = 29.0


def child(lanes: int, batch_size: int, rounds: int, words: bool, encoder_batch: int) -> None:
    """One setting: the engine loaded, `lanes` threads of batches; a JSON line."""
    from deployments.config import WhisperModelConfig
    from deployments.transcriber.engines import load_engine
    from deployments.types import ChunkOptions
    from scripts.bench_batch_memory import PeakMemory, batch_items, speech

    whisper = WhisperModelConfig(
        model="embedded:base",
        compute_type="int8",
        cpu_threads=1,
        parallel_batches=lanes,
        max_batch_memory_mb=1 << 20,
        encoder_batch_size=encoder_batch,
    )
    probe = PeakMemory("cpu")
    engine = load_engine(whisper)
    items = batch_items(speech(None), 16, CHUNK_S) * 2
    options = ChunkOptions(language="en", word_timestamps=words, segment_timestamps=words)  # a job's, else json's
    engine.transcribe_batch(items[:1], options)  # warm-up
    loaded = probe.now_mb()

    def lane(index: int) -> None:
        for round_ in range(rounds):
            first = (index * batch_size + round_ * lanes * batch_size) % 16
            engine.transcribe_batch(items[first : first + batch_size], options)

    started = time.perf_counter()
    with probe:
        threads = [threading.Thread(target=lane, args=(index,)) for index in range(lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    seconds = time.perf_counter() - started
    time.sleep(1)
    audio_s = lanes * rounds * batch_size * CHUNK_S
    print(json.dumps({"peak": probe.peak_mb - loaded, "held": probe.now_mb() - loaded, "speed": audio_s / seconds}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default="default,service,default,service")
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--words", action="store_true")
    parser.add_argument("--encoder-batches", default="1", help="whisper.encoder_batch_size values, each in turn")
    parser.add_argument("--encoder-batch", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.lanes, args.batch_size, args.rounds, args.words, args.encoder_batch)
        return
    shape = ["--lanes", str(args.lanes), "--batch-size", str(args.batch_size), "--rounds", str(args.rounds)]
    shape += ["--words"] if args.words else []
    print(f"Whisper base int8, {args.lanes} threads x batches of {args.batch_size} x {args.rounds} rounds", flush=True)
    print("| setting | encoder items at once | peak MB over the model | held after, MB | audio s/s |", flush=True)
    print("|---|---|---|---|---|", flush=True)
    runs = [(name, batch) for name in args.settings.split(",") for batch in args.encoder_batches.split(",")]
    for name, encoder_batch in runs:
        command = [sys.executable, "-m", "scripts.bench_allocator", "--child", *shape, "--encoder-batch", encoder_batch]
        done = subprocess.run(command, env={**os.environ, **SETTINGS[name]}, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            print(f"| {name} | {encoder_batch} | failed: {done.stderr[-300:]!r} |", flush=True)
            continue
        figures = json.loads(lines[-1])
        print(
            f"| {name} | {encoder_batch} | {figures['peak']:.0f} | {figures['held']:.0f} | {figures['speed']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
