"""What each analysis costs per minute of audio, through the running service with the embedded LLM: seconds
and LLM tokens of a synchronous request with `prompt`, `prompt` + `json_schema`, `roles` and `emotions`,
beside the same request without the analysis in the same run (transcription alone for a prompt, diarization
alone for roles and emotions), as a ratio.

Starts a local service (the tiny embedded Whisper, the embedded SmolLM2-135M) and sends the same recording
for each variant, in turns, `--runs` times; prints the median seconds, seconds per audio minute, LLM tokens
per audio minute (from the usage statement) and the ratio to the baseline. The recording: pyannote's 30 s
two-speaker call (installed with pyannote.audio), or `--audio PATH` (its first `--seconds`).

    .venv/bin/python -m scripts.bench_analysis_cost [--runs 2] [--audio ../shared/audio/dev00.wav --seconds 120]
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample

KEY = "bench-analysis"
SCHEMA = {
    "type": "object",
    "properties": {"topic": {"type": "string"}, "resolved": {"type": "boolean"}},
    "required": ["topic", "resolved"],
}
VARIANTS: dict[str, tuple[str | None, dict[str, str]]] = {
    # name: (its baseline, form fields)
    "transcribe": (None, {"response_format": "verbose_json"}),
    "+ prompt": ("transcribe", {"prompt": "Summarise the conversation in two sentences."}),
    "+ prompt, json_schema": (
        "transcribe",
        {"prompt": "What is the conversation about, and is it resolved?", "json_schema": json.dumps(SCHEMA)},
    ),
    "diarize": (None, {"task": "diarize"}),
    "+ roles auto": ("diarize", {"task": "diarize", "roles": "auto"}),
    "+ roles list": ("diarize", {"task": "diarize", "roles": json.dumps(["caller", "agent"])}),
    "+ emotions": ("diarize", {"task": "diarize", "emotions": "true", "model": "nexara-ru"}),
}


def _tokens(client: httpx.Client) -> int:
    """LLM tokens (in + out) of the key's latest charge."""
    latest = client.get("/v1/billing/usage", params={"limit": 1}).json()["items"][0]  # newest first
    return (latest["llm_input_tokens"] or 0) + (latest["llm_output_tokens"] or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--audio", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    samples = decode_audio(args.audio or pyannote_sample()).samples[: int(args.seconds * 16_000)]
    minutes = len(samples) / 16_000 / 60
    clip = encode(samples, "wav")
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    tokens: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as workdir:
        keys = Path(workdir) / "keys.yaml"
        entry = {"key": KEY, "name": "bench", "balance": 1e9, "rate_per_min": 1.0, "requests_per_second": 1000}
        keys.write_text(yaml.safe_dump({"keys": [entry]}))
        analysis = {"sync_timeout_s": 3600, "timeout_s": 3600}
        with LocalService(Path(workdir), [KEY], keys_file=keys, analysis=analysis) as service:
            headers = {"Authorization": f"Bearer {KEY}"}
            with httpx.Client(base_url=service.base_url, headers=headers, timeout=3600) as client:
                client.post("/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data={"task": "diarize"})
                for _ in range(args.runs):  # variants in turns: each run sees the same machine
                    for name, (_, form) in VARIANTS.items():
                        started = time.perf_counter()
                        response = client.post("/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data=form)
                        seconds[name].append(time.perf_counter() - started)
                        response.raise_for_status()
                        tokens[name] = _tokens(client)
    print(f"{minutes * 60:.0f} s of audio, {args.runs} runs; seconds are medians, per audio minute in brackets")
    print(f"{'request':24} {'seconds':>16} {'LLM tokens/min':>15} {'x baseline':>11}")
    for name, (baseline, _) in VARIANTS.items():
        median = statistics.median(seconds[name])
        ratio = f"{median / statistics.median(seconds[baseline]):.2f}" if baseline else "1.00"
        runs = ", ".join(f"{s:.1f}" for s in seconds[name])
        print(f"{name:24} {median:7.1f} ({median / minutes:5.1f}) {tokens[name] / minutes:15.0f} {ratio:>11}  [{runs}]")


if __name__ == "__main__":
    main()
