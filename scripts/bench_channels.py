"""What multichannel costs (issue 64): a two-party call with each speaker on a channel of their own (pyannote's
call, each speaker's turns on their channel per sample.rttm), transcribed with `multichannel=true` (each channel a
file of its own: a channel is a speaker), against the same call mixed to mono, transcribed alone and diarized
(`task=diarize`: what a user without channels runs to learn who spoke), in the same run, interleaved.

    .venv/bin/python -m scripts.bench_channels [--model embedded:base] [--rounds 3]
"""

import argparse
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from pyannote.database.util import load_rttm

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, encode_channels, pyannote_sample
from devkit.percentiles import percentile

KEY = "bench"
RATE = 16_000


def two_party(samples: np.ndarray) -> bytes:
    annotation = next(iter(load_rttm(str(Path(pyannote_sample()).with_suffix(".rttm"))).values()))
    channels = []
    for label in sorted(annotation.labels()):
        channel = np.zeros_like(samples)
        for segment in annotation.label_timeline(label):
            start, end = int(segment.start * RATE), int(segment.end * RATE)
            channel[start:end] = samples[start:end]
        channels.append(channel)
    return encode_channels(channels)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    samples = decode_audio(pyannote_sample()).samples
    cases = {
        "multichannel, a channel a speaker": (two_party(samples), {"multichannel": "true", "task": "diarize"}),
        "mono, transcribed": (encode(samples, "wav"), {}),
        "mono, diarized": (encode(samples, "wav"), {"task": "diarize"}),
    }  # fmt: skip
    took: dict[str, list[float]] = {name: [] for name in cases}
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(Path(workdir), [KEY], model=args.model, unthrottled=True) as service,
        httpx.Client(base_url=service.base_url, timeout=600, headers={"Authorization": f"Bearer {KEY}"}) as http,
    ):
        for round_index in range(args.rounds + 1):  # the first round warms every path up
            for name, (audio, fields) in cases.items():
                started = time.perf_counter()
                answer = http.post("/v1/audio/transcriptions", files={"file": ("call.wav", audio)}, data=fields)
                answer.raise_for_status()
                if round_index:
                    took[name].append(time.perf_counter() - started)
    baseline = percentile(took["mono, diarized"], 0.5)
    print(f"the 30 s call, {args.model}, {args.rounds} rounds interleaved: p50 seconds (ratio to mono, diarized)")
    for name, seconds in took.items():
        print(f"{name:48} {percentile(seconds, 0.5):6.2f} s   {percentile(seconds, 0.5) / baseline:5.2f}x")


if __name__ == "__main__":
    main()
