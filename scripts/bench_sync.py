"""Synchronous overhead: one request through the running service vs. faster-whisper called directly.

The baseline is `faster_whisper.WhisperModel.transcribe` (decode + VAD + decoding, in one process) on the
same model and settings as configs/local.yaml, on the same clip, in one run, one after the other (never at
once: they share the CPU). Prints medians and the ratio service/direct.

    .venv/bin/python -m scripts.bench_sync [--model embedded:base] [--runs 5]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import yaml
from faster_whisper import WhisperModel

from deployments.audio_decoder import decode_audio
from deployments.model_store import resolve_ctranslate2_model
from scripts.local_service import ROOT, LocalService
from serve_app.config import AppConfig
from tests.media import SHARED_AUDIO, encode, pyannote_sample


def _clip() -> tuple[str, bytes]:
    jfk = SHARED_AUDIO / "jfk.flac"
    if jfk.exists():
        return "jfk.flac (11 s)", jfk.read_bytes()
    samples = decode_audio(pyannote_sample()).samples[6 * 16_000 : 16 * 16_000]
    return "pyannote sample.wav 6-16 s (10 s)", encode(samples, "wav")


def _time_service(data: bytes, model: str, runs: int) -> list[float]:
    """Seconds per request, after one warm-up, against a freshly started local service."""
    with tempfile.TemporaryDirectory() as workdir, LocalService(Path(workdir), ["bench"], model=model) as service:
        headers = {"Authorization": "Bearer bench"}
        with httpx.Client(base_url=service.base_url, headers=headers, timeout=600) as client:
            timings = []
            for _ in range(runs + 1):
                started = time.perf_counter()
                client.post("/v1/audio/transcriptions", files={"file": ("clip", data)}).raise_for_status()
                timings.append(time.perf_counter() - started)
    return timings[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    name, data = _clip()
    local = yaml.safe_load((ROOT / "configs" / "local.yaml").read_text())
    config = AppConfig.model_validate(local["applications"][0]["args"])
    config.whisper.model = args.model

    whisper = config.whisper
    model = WhisperModel(
        resolve_ctranslate2_model(whisper.model),
        compute_type=whisper.compute_type,
        cpu_threads=whisper.cpu_threads,
        local_files_only=True,
    )

    def transcribe_directly() -> None:
        samples = decode_audio(data).samples  # the service decodes too: count it on both sides
        segments, _ = model.transcribe(samples, beam_size=whisper.beam_size, vad_filter=config.chunking.vad_filter)
        list(segments)  # a generator: decoding happens while it is consumed

    transcribe_directly()  # warm-up
    direct = []
    for _ in range(args.runs):
        started = time.perf_counter()
        transcribe_directly()
        direct.append(time.perf_counter() - started)

    served = _time_service(data, args.model, args.runs)

    direct_s, served_s = statistics.median(direct), statistics.median(served)
    print(f"clip: {name}; model: {args.model}; runs: {args.runs}; medians")
    print(f"{'faster-whisper directly':40s} {direct_s:8.3f} s")
    print(f"{'service, POST /v1/audio/transcriptions':40s} {served_s:8.3f} s")
    print(f"{'ratio service / direct':40s} {served_s / direct_s:8.3f}")


if __name__ == "__main__":
    main()
