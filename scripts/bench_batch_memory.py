"""Peak memory of one Transcriber batch, by engine, encoder window and batch size (issue 63).

A batch's memory is its activations (the encoder's attention over the window, the decoder's beams and caches),
on top of the loaded weights: it grows with the batch size and the window, not with the length of the job.
Each engine and window runs in a child process of its own (a fresh allocator), batch sizes rising, each
measured after one warm-up batch of its size; a thread samples the process's memory every millisecond:

- CPU: the resident set (`/proc/self/statm`), its peak during the batch over its level before it;
- CUDA: the device's used memory (NVML), its peak over the level after the model loaded (the engines' caching
  allocators keep what a batch took, so with batch sizes rising each figure is that batch's own peak), and for
  the transformers engine PyTorch's own peak of allocated memory over the weights.

The budget (`whisper.max_batch_memory_mb`) is lifted so that each batch runs as asked; `estimate MB` is what
`batch_memory.py` reckons the batch takes, the figure the budget is held to.

Speech is real (jfk.flac and pyannote's two-speaker call, cycled); each item of a batch starts elsewhere in it.
`json` decodes the text only; `verbose_json` also aligns the words (one more decoder pass over the encoder output).

    python -m scripts.bench_batch_memory [--model embedded:base] [--device cpu|cuda]
        [--engines ctranslate2 transformers] [--windows 10 30] [--batch-sizes 1 2 4 8 16]
        [--formats json verbose_json] [--audio-npz FILE] [--encoder-batch-size N]
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from deployments.config import WhisperModelConfig
from deployments.types import SAMPLE_RATE, ChunkOptions

ROOT = Path(__file__).resolve().parents[1]
FULL_WINDOW_S = 30
UNBOUNDED_MB = 1_000_000
FORMATS = {  # response format -> the chunk options the pipeline sends for it
    "json": ChunkOptions(language="en", segment_timestamps=False),
    "verbose_json": ChunkOptions(language="en"),
}


def speech(audio_npz: Path | None) -> np.ndarray:
    """Real speech to cut batch items from: the clips of `audio_npz` (int16 at 16 kHz, as
    `scripts.bench_engine_gpu --pack` writes them), else jfk.flac (from ../shared) and pyannote's call."""
    if audio_npz is not None:
        with np.load(audio_npz) as packed:
            clips = [packed[name].astype(np.float32) / 32768 for name in sorted(packed.files)]
    else:
        from deployments.files.decoding import decode_audio
        from devkit.media import SHARED_AUDIO, pyannote_sample

        paths = [p for p in (SHARED_AUDIO / "jfk.flac", pyannote_sample()) if p.exists()]
        clips = [decode_audio(path).samples for path in paths]
    return np.concatenate(clips)


def batch_items(recording: np.ndarray, count: int, seconds: float) -> list[np.ndarray]:
    """`count` chunks of `seconds` each, starting at different places of the recording (cycled)."""
    length = int(seconds * SAMPLE_RATE)
    looped = np.concatenate([recording] * (length // len(recording) + 2))
    step = max(1, (len(recording) // max(count, 1)) // SAMPLE_RATE * SAMPLE_RATE)
    return [looped[(i * step) % len(recording) :][:length] for i in range(count)]


class PeakMemory:
    """Samples this process's memory every millisecond while in use; `peak_mb` is the highest seen."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if device == "cuda":
            import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py, where a GPU is

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def now_mb(self) -> float:
        if self.device == "cuda":
            return float(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used) / 2**20
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self.now_mb())
            time.sleep(0.001)

    def __enter__(self) -> "PeakMemory":
        self.peak_mb = self.now_mb()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_mb = max(self.peak_mb, self.now_mb())


def item_seconds(engine: str, window_s: int, whisper: WhisperModelConfig) -> tuple[float, str]:
    """How long each item is, and the encoder window it asks for, so that the engine reads it in `window_s`."""
    if window_s >= FULL_WINDOW_S or engine != "ctranslate2":
        return FULL_WINDOW_S - 1.0, "full"
    return window_s - whisper.short_window_margin_s - 0.5, "audio"


def measure(engine_name: str, window_s: int, args: argparse.Namespace) -> None:
    """The child: one engine, one window, batch sizes rising; a JSON line per measurement."""
    from deployments.transcriber.engines import load_engine

    whisper = WhisperModelConfig(
        model=args.model,
        engine=engine_name,
        device=args.device,
        compute_type="float16" if args.device == "cuda" else "int8",
        cpu_threads=args.cpu_threads,
        parallel_batches=1,
        max_batch_memory_mb=UNBOUNDED_MB,  # the batch as asked, not cut to the budget: its own peak is measured
        encoder_batch_size=args.encoder_batch_size,
    )
    probe = PeakMemory(args.device)
    before_load = probe.now_mb()
    engine = load_engine(whisper)
    torch_cuda = engine_name == "transformers" and args.device == "cuda"
    if torch_cuda:
        import torch
    loaded = probe.now_mb()
    recording = speech(args.audio_npz)
    seconds, window = item_seconds(engine_name, window_s, whisper)
    for batch_size in args.batch_sizes:
        items = batch_items(recording, batch_size, seconds)
        for response_format in args.formats:
            options = FORMATS[response_format].model_copy(update={"encoder_window": window})
            engine.transcribe_batch(items, options)  # warm-up: the allocators reach this batch's level
            level = probe.now_mb()
            if torch_cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                weights = torch.cuda.memory_allocated()
            started = time.perf_counter()
            with probe:
                transcripts = engine.transcribe_batch(items, options)
            row: dict[str, Any] = {
                "engine": engine_name,
                "device": args.device,
                "compute_type": whisper.compute_type if engine_name == "ctranslate2" else "float16/32",
                "window_s": window_s,
                "batch": batch_size,
                "format": response_format,
                "weights_mb": round(loaded - before_load, 1),
                "peak_over_loaded_mb": round(probe.peak_mb - loaded, 1),
                "peak_over_before_mb": round(probe.peak_mb - level, 1),
                "seconds": round(time.perf_counter() - started, 3),
                "words": sum(len(segment.text.split()) for t in transcripts for segment in t.segments),
                "estimate_mb": round(engine.memory.batch_mb(batch_size, window_s), 1),
            }
            if torch_cuda:
                row["torch_peak_mb"] = round((torch.cuda.max_memory_allocated() - weights) / 2**20, 1)
            print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--engines", nargs="+", default=["ctranslate2", "transformers"])
    parser.add_argument("--windows", nargs="+", type=int, default=[10, 30])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 2, 4, 8, 16])
    parser.add_argument("--formats", nargs="+", choices=list(FORMATS), default=["json", "verbose_json"])
    parser.add_argument("--cpu-threads", type=int, default=2)
    parser.add_argument("--audio-npz", type=Path, default=None)
    parser.add_argument(
        "--encoder-batch-size", type=int, default=None, help="whisper.encoder_batch_size (64: the whole batch at once)"
    )
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "WINDOW"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.batch_sizes = sorted(args.batch_sizes)
    if args.child:
        measure(args.child[0], int(args.child[1]), args)
        return
    rows = []
    for engine in args.engines:
        for window_s in sorted(args.windows):
            if engine != "ctranslate2" and window_s < FULL_WINDOW_S:
                continue  # the transformers engine reads every chunk in Whisper's 30 s window
            child = [
                sys.executable,
                "-m",
                "scripts.bench_batch_memory",
                *sys.argv[1:],
                "--child",
                engine,
                str(window_s),
            ]
            done = subprocess.run(child, cwd=ROOT, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            rows += [json.loads(line) for line in lines]
            if done.returncode != 0:
                print(f"{engine} {window_s} s failed:\n{done.stderr[-3000:]}", flush=True)
            for line in lines:
                print(line, flush=True)
    print(f"\n{args.model} on {args.device}: peak memory of one batch over the loaded model (MB)")
    print("| engine | window | format | batch | peak MB | per item MB | estimate MB | batch s | torch peak MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['engine']} | {row['window_s']} s | {row['format']} | {row['batch']} | "
            f"{row['peak_over_loaded_mb']:.0f} | {row['peak_over_loaded_mb'] / row['batch']:.0f} | "
            f"{row.get('estimate_mb', 0):.0f} | "
            f"{row['seconds']:.2f} | "
            f"{row.get('torch_peak_mb', '')} |"
        )


if __name__ == "__main__":
    main()
