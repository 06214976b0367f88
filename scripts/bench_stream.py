"""`stream=true`: how soon the first text arrives, against the same file answered whole (the baseline).

One freshly started local service, one file of real speech (the pyannote call repeated to --minutes);
for each of --runs rounds, the whole request (response_format=json) and the streamed one through the
`openai` SDK, one after the other. Prints per run: the whole request's time, the streamed request's time
to its first delta and to its done event, and the ratios.

    .venv/bin/python -m scripts.bench_stream [--minutes 2] [--runs 2] [--model embedded:base]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import openai

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample

KEY = "bench"


def _whole(client: openai.OpenAI, audio: bytes) -> float:
    started = time.perf_counter()
    client.audio.transcriptions.create(model="whisper-1", file=("speech.flac", audio))
    return time.perf_counter() - started


def _streamed(client: openai.OpenAI, audio: bytes) -> tuple[float, float, int]:
    started = time.perf_counter()
    first, deltas = None, 0
    for event in client.audio.transcriptions.create(model="whisper-1", file=("speech.flac", audio), stream=True):
        if event.type == "transcript.text.delta":
            deltas += 1
            first = first or time.perf_counter() - started
    return first or float("nan"), time.perf_counter() - started, deltas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--model", default="embedded:base")
    args = parser.parse_args()

    call = decode_audio(pyannote_sample()).samples
    samples = np.tile(call, int(np.ceil(args.minutes * 60 * 16_000 / len(call))))[: int(args.minutes * 60 * 16_000)]
    audio = encode(samples, "flac")
    with LocalService(Path(tempfile.mkdtemp()), [KEY], model=args.model) as service:
        client = openai.OpenAI(base_url=f"{service.base_url}/v1", api_key=KEY, max_retries=0, timeout=900)
        _whole(client, encode(call[: 5 * 16_000], "flac"))  # warm up the replicas
        print(f"{args.model}, {args.minutes:.1f} min of speech")
        print("run  whole(s)  first delta(s)  streamed done(s)  deltas  first/whole  done/whole")
        for run in range(1, args.runs + 1):
            whole = _whole(client, audio)
            first, done, deltas = _streamed(client, audio)
            print(f"{run:>3}  {whole:8.2f}  {first:14.2f}  {done:16.2f}  {deltas:6d}  {first / whole:11.2f}"
                  f"  {done / whole:10.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
