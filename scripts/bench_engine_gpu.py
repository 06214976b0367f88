"""The engine's figures on one GPU, without Ray (issue 63): what the Transcriber does with many requests' chunks
against faster-whisper on the same weights, the same GPU and the same audio, in one run.

1. 16 clips of 11 s: faster-whisper `WhisperModel.transcribe` one after another (beam 5, VAD), as a script
   serving requests one at a time would; against the clips' VAD chunks in the engine's batches (the
   Transcriber's `max_batch_size`, `configs/gpu.yaml`: 32), `json` (text only) and `verbose_json` (timed).
2. A long recording (default 10 min, the clips with 1 s of silence between them): faster-whisper's
   `BatchedInferencePipeline` (batch as the engine's) against the recording's VAD chunks in the engine's batches.
Each side runs once to warm up, then `--runs` times; each run's peak device memory (NVML) is printed beside its
time. The texts are compared side by side (WER of ours against faster-whisper's, after normalisation).

    python -m scripts.bench_engine_gpu [--model embedded:base] [--engines ctranslate2 transformers] [--runs 2]
        [--minutes 10] [--batch-size 32] [--audio-npz FILE]
    python -m scripts.bench_engine_gpu --pack FILE   # here: jfk.flac and pyannote's call as int16, to carry
"""

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jiwer
import numpy as np

from deployments.config import WhisperModelConfig
from deployments.files._chunking import SpeechChunker, chunk_audio
from deployments.transcriber.engines import load_engine
from deployments.transcriber.engines.base import WhisperEngine
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions
from scripts.bench_batch_memory import PeakMemory

CLIPS = 16
CLIP_S = 11
FORMATS = {"json": ChunkOptions(segment_timestamps=False), "verbose_json": ChunkOptions()}


def pack(target: Path) -> None:
    from deployments.files.decoding import decode_audio
    from devkit.media import SHARED_AUDIO, pyannote_sample

    paths = [p for p in (SHARED_AUDIO / "jfk.flac", pyannote_sample()) if p.exists()]
    clips = {path.stem: np.round(decode_audio(path).samples * 32767).astype(np.int16) for path in paths}
    np.savez_compressed(target, allow_pickle=False, **clips)


def load_clips(audio_npz: Path) -> list[np.ndarray]:
    with np.load(audio_npz) as packed:
        return [packed[name].astype(np.float32) / 32768 for name in sorted(packed.files)]


def short_clips(sources: list[np.ndarray]) -> list[np.ndarray]:
    """CLIPS windows of CLIP_S seconds of the sources' speech, cycled."""
    size = CLIP_S * SAMPLE_RATE
    windows = [s[start : start + size] for s in sources for start in range(0, len(s) - size + 1, size)]
    return [windows[i % len(windows)] for i in range(CLIPS)]


def long_recording(sources: list[np.ndarray], minutes: float) -> np.ndarray:
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    pieces: list[np.ndarray] = []
    while sum(len(p) for p in pieces) < minutes * 60 * SAMPLE_RATE:
        for source in sources:
            pieces += [source, silence]
    return np.concatenate(pieces)


def normalised(text: str) -> str:
    return " ".join(jiwer.RemovePunctuation()(text.lower()).split())


def wer(reference: list[str], hypothesis: list[str]) -> float:
    pairs = [(normalised(r), normalised(h)) for r, h in zip(reference, hypothesis, strict=True) if normalised(r)]
    return float(jiwer.wer([r for r, _ in pairs], [h for _, h in pairs]))


def engine_texts(
    engine: WhisperEngine, recordings: list[np.ndarray], options: ChunkOptions, batch_size: int
) -> list[str]:
    """Each recording's VAD chunks, all recordings' chunks batched together (as the Transcriber batches across
    requests); the chunking counts in the time, as the VAD of faster-whisper's side does."""
    chunker = SpeechChunker(use_vad=True)
    chunks = [(i, chunk_audio(rec, pieces)) for i, rec in enumerate(recordings) for pieces in chunker.chunks(rec)]
    texts = [""] * len(recordings)
    for start in range(0, len(chunks), batch_size):
        batch = chunks[start : start + batch_size]
        for (index, _), transcript in zip(batch, engine.transcribe_batch([c for _, c in batch], options), strict=True):
            texts[index] += " " + "".join(segment.text for segment in transcript.segments)
    return texts


class Timings:
    """Each side's mean time, by label, and its printed line (times, audio seconds per second, memory peak)."""

    def __init__(self, runs: int, device: str) -> None:
        self.runs, self.device = runs, device
        self.seconds: dict[str, float] = {}

    def run(self, label: str, audio_s: float, work: Callable[[], list[str]]) -> list[str]:
        work()  # warm-up
        seconds, peaks = [], []
        texts: list[str] = []
        for _ in range(self.runs):
            with PeakMemory(self.device) as probe:
                started = time.perf_counter()
                texts = work()
                seconds.append(time.perf_counter() - started)
            peaks.append(probe.peak_mb)
        runs_text = " / ".join(f"{s:.2f} s ({audio_s / s:.0f} audio s/s)" for s in seconds)
        print(f"  {label}: {runs_text}; memory peak {max(peaks):.0f} MB", flush=True)
        self.seconds[label] = statistics.mean(seconds)
        return texts

    def ratio(self, baseline: str, ours: str) -> float:
        return self.seconds[baseline] / self.seconds[ours]


def baselines(
    whisper: WhisperModelConfig, clips: list[np.ndarray], recording: np.ndarray, batch_size: int, timings: Timings
) -> tuple[list[str], list[str]]:
    """faster-whisper on the same weights: the clips one after another, the recording batched."""
    from faster_whisper import BatchedInferencePipeline

    model = CTranslate2Engine(whisper).model
    batched = BatchedInferencePipeline(model)

    def sequential() -> list[str]:
        return ["".join(s.text for s in model.transcribe(c, beam_size=5, vad_filter=True)[0]) for c in clips]

    def pipeline() -> list[str]:
        segments, _ = batched.transcribe(recording, beam_size=5, batch_size=batch_size, vad_filter=True)
        return ["".join(s.text for s in segments)]

    print(f"1. {CLIPS} clips of {CLIP_S} s ({CLIPS * CLIP_S} s of audio)", flush=True)
    on_clips = timings.run(SEQUENTIAL, CLIPS * CLIP_S, sequential)
    print(f"2. {len(recording) / SAMPLE_RATE / 60:.1f} min recording", flush=True)
    on_recording = timings.run(PIPELINE, len(recording) / SAMPLE_RATE, pipeline)
    return on_clips, on_recording


SEQUENTIAL = "faster-whisper sequential"
PIPELINE = "BatchedInferencePipeline"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--engines", nargs="+", default=["ctranslate2", "transformers"])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--audio-npz", type=Path)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda", help="cpu: to try the script here")
    parser.add_argument("--pack", type=Path, help="write the audio to carry, then stop")
    args = parser.parse_args()
    if args.pack:
        pack(args.pack)
        return
    sources = load_clips(args.audio_npz)
    clips, recording = short_clips(sources), long_recording(sources, args.minutes)
    clips_s, recording_s = CLIPS * CLIP_S, len(recording) / SAMPLE_RATE
    precision = "float16" if args.device == "cuda" else "int8"
    whisper = WhisperModelConfig(model=args.model, device=args.device, compute_type=precision, parallel_batches=1)
    timings = Timings(args.runs, args.device)
    print(f"{args.model}, {precision}, batch {args.batch_size}, {args.runs} runs after a warm-up", flush=True)
    on_clips, on_recording = baselines(whisper, clips, recording, args.batch_size, timings)
    for engine_name in args.engines:
        engine = load_engine(whisper.model_copy(update={"engine": engine_name}))
        for response_format, options in FORMATS.items():
            label = f"{engine_name} {response_format}"
            texts = timings.run(f"1. {label}", clips_s, partial(engine_texts, engine, clips, options, args.batch_size))
            ratio = timings.ratio(SEQUENTIAL, f"1. {label}")
            print(f"     {ratio:.2f}x {SEQUENTIAL}; WER against it {wer(on_clips, texts):.3f}")
            texts = timings.run(
                f"2. {label}", recording_s, partial(engine_texts, engine, [recording], options, args.batch_size)
            )
            ratio = timings.ratio(PIPELINE, f"2. {label}")
            print(f"     {ratio:.2f}x {PIPELINE}; WER against it {wer(on_recording, texts):.3f}")
        del engine


if __name__ == "__main__":
    main()
