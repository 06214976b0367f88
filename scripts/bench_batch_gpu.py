"""Bulk transcription on one GPU (issue 49): `stt batch` (Ray Data, one actor holding the GPU) with each engine,
against that engine's library alone on the same GPU and the same files.

For each engine, one after another (they share the GPU):
1. the library alone, the model loaded before the clock: ctranslate2 -> faster-whisper's
   `BatchedInferencePipeline` (VAD chunks, batch `max_batch_size`); transformers -> Hugging Face's
   `pipeline("automatic-speech-recognition")` (30 s windows, batch `max_batch_size`); beam as configured;
2. `python -m serve_app.batch` on `configs/gpu.yaml` with that engine and the model below, one actor with one
   GPU; its wall time includes starting Ray and loading the model in the actor (a user's run does).
Audio seconds per wall second for each and batch / alone. The files are `--files` recordings of `--seconds`
each, cut from the audio in `--audio` (default: what `scripts.bench_batch` uses), 1 s of silence between clips.

    python -m scripts.bench_batch_gpu [--model embedded:base | CT2_DIR] [--engines transformers ctranslate2]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from deployments.config import WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.transcriber._model_store import cache_dir, resolve_ctranslate2_model
from deployments.types import SAMPLE_RATE
from scripts.bench_batch import build_files, sources

ROOT = Path(__file__).resolve().parents[1]
AUDIO = (".flac", ".wav", ".mp3", ".ogg", ".m4a")


def clips_from(folder: Path | None) -> list[np.ndarray]:
    if folder is None:
        return sources()
    return [decode_audio(path).samples for path in sorted(folder.iterdir()) if path.suffix in AUDIO]


def hf_checkpoint(ct2_dir: Path) -> Path:
    """The transformers engine's checkpoint: the CTranslate2 weights converted once, beside them."""
    from deployments.transcriber.engines.hf_checkpoint import convert_ct2_to_hf

    target = ct2_dir.parent / f"{ct2_dir.name}-hf"
    if not (target / "model.safetensors").exists():
        convert_ct2_to_hf(ct2_dir, target)
    return target


def ctranslate2_alone(files: list[Path], whisper: WhisperModelConfig, batch_size: int) -> float:
    from faster_whisper import BatchedInferencePipeline

    from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine

    pipeline = BatchedInferencePipeline(CTranslate2Engine(whisper).model)
    started = time.perf_counter()
    for path in files:
        segments, _ = pipeline.transcribe(
            decode_audio(path).samples, beam_size=whisper.beam_size, batch_size=batch_size, vad_filter=True
        )
        text = "".join(segment.text for segment in segments)  # a generator: the work happens here
    print(f"  last file, alone: {text[:160]!r}", flush=True)
    return time.perf_counter() - started


def transformers_alone(files: list[Path], whisper: WhisperModelConfig, batch_size: int) -> float:
    import torch
    from transformers import pipeline

    gpu = whisper.device == "cuda"
    asr = pipeline(
        "automatic-speech-recognition",
        model=whisper.model,
        dtype=torch.float16 if gpu else torch.float32,
        device="cuda:0" if gpu else "cpu",
        ignore_warning=True,
    )
    tokenizer = asr.tokenizer
    if tokenizer is not None and tokenizer.pad_token_id is None:  # the converted one names none: pad with end-of-text
        tokenizer.pad_token_id = asr.model.config.eos_token_id
    started = time.perf_counter()
    inputs: Any = [{"raw": decode_audio(path).samples, "sampling_rate": SAMPLE_RATE} for path in files]
    outputs = asr(inputs, batch_size=batch_size, chunk_length_s=30, generate_kwargs={"num_beams": whisper.beam_size})
    wall = time.perf_counter() - started
    print(f"  last file, alone: {outputs[-1]['text'][:160]!r}", flush=True)
    return wall


def stt_batch(folder: Path, output: Path, config: Path, gpus: float, files_per_batch: int, batches: int) -> float:
    command = [sys.executable, "-m", "serve_app.batch", str(folder), str(output), "--config", str(config),
               "--num-gpus", str(gpus), "--num-cpus", "4" if gpus else "1", "--files-per-batch",
               str(files_per_batch), "--batches-per-actor", str(batches)]  # fmt: skip
    started = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])})  # fmt: skip
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-4000:])
    progress = [line for line in run.stderr.splitlines() if line.startswith("[")]
    print(f"  stt batch's last progress line: {progress[-1] if progress else '-'}", flush=True)
    rows = (output / "_manifest.jsonl").read_text().splitlines()
    assert len(rows) == len(list(folder.glob("*.wav"))) and all('"ok"' in row for row in rows), rows[:3]
    last = sorted(output.glob("*.json"))[-1].read_text()
    print(f"  last file, batch: {last[:200]!r}", flush=True)
    return wall


def batch_config(path: Path, whisper: WhisperModelConfig, max_batch_size: int) -> None:
    """configs/gpu.yaml with this engine and model (and the device given), its Transcriber's batching kept."""
    serve = yaml.safe_load((ROOT / "configs" / "gpu.yaml").read_text())
    application = serve["applications"][0]
    application["args"]["whisper"] = whisper.model_dump(exclude_defaults=True) | {"engine": whisper.engine}
    for deployment in application["deployments"]:
        if deployment["name"] == "Transcriber":
            deployment["user_config"]["max_batch_size"] = max_batch_size
    path.write_text(yaml.safe_dump(serve))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base", help="embedded:base, embedded:tiny.en or a CT2 directory")
    parser.add_argument("--engines", nargs="+", default=["transformers", "ctranslate2"])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--audio", type=Path, help="a folder of recordings to cut the files from")
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch-size", type=int, default=32, help="the Transcriber's max_batch_size and the library's")
    parser.add_argument("--files-per-batch", type=int, default=8)
    parser.add_argument("--batches-per-actor", type=int, default=4)
    args = parser.parse_args()
    ct2_dir = Path(resolve_ctranslate2_model(args.model, cache_dir()))
    gpu = args.device == "cuda"
    with tempfile.TemporaryDirectory(prefix="bench-batch-gpu-") as temporary:
        workdir = Path(temporary)
        folder = workdir / "in"
        folder.mkdir()
        audio_s = build_files(folder, args.files, args.seconds, clips_from(args.audio))
        files = sorted(folder.glob("*.wav"))
        print(f"{len(files)} files, {audio_s / 60:.1f} min of audio; {ct2_dir.name}, {args.device}", flush=True)
        rows: list[tuple[str, str, float]] = []
        for engine in args.engines:
            model = str(hf_checkpoint(ct2_dir) if engine == "transformers" else ct2_dir)
            whisper = WhisperModelConfig(
                engine=engine, model=model, device=args.device, compute_type="float16" if gpu else "int8"
            )
            alone = transformers_alone if engine == "transformers" else ctranslate2_alone
            try:
                rows.append((engine, "library alone", alone(files, whisper, args.batch_size)))
                print(f"{engine} alone: {rows[-1][2]:.1f} s", flush=True)
                config = workdir / f"{engine}.yaml"
                batch_config(config, whisper, args.batch_size)
                wall = stt_batch(folder, workdir / f"out-{engine}", config, 1.0 if gpu else 0.0,
                                 args.files_per_batch, args.batches_per_actor)  # fmt: skip
                rows.append((engine, "stt batch (Ray Data, one actor)", wall))
                print(f"{engine} stt batch: {wall:.1f} s", flush=True)
            except Exception as error:  # one engine failing (a missing CUDA library) must not lose the other's rows
                print(f"{engine} failed: {type(error).__name__}: {str(error)[-2000:]}", flush=True)
    print("\n| engine | path | wall s | audio s / wall s |\n|---|---|---|---|")
    for engine, path, wall in rows:
        print(f"| {engine} | {path} | {wall:.1f} | {audio_s / wall:.1f} |")
    walls = {(engine, path): wall for engine, path, wall in rows}
    for engine in args.engines:
        pair = [wall for (name, _), wall in walls.items() if name == engine]
        if len(pair) == 2:
            print(f"{engine}: batch / alone {pair[0] / pair[1]:.2f}x")


if __name__ == "__main__":
    main()
