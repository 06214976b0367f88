"""Latency of one 10 s file through each REST protocol this service speaks, against its own nexara/OpenAI route
in the same run: the same audio, the same service, requests interleaved so that every protocol sees the same
machine. What it measures is each edge's translation (reading the request, rendering the answer) and, for the
asynchronous protocols, the job round trip (upload, submit, polls), not Whisper, which is the same for all.

Synchronous protocols are compared with `POST /v1/audio/transcriptions`; AssemblyAI (upload, transcript, polls)
with our async job route (submit, polls), both polled every `--poll-ms`.

    .venv/bin/python -m scripts.bench_protocols [--rounds 5] [--poll-ms 100]
"""

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile

KEY = "bench"
CLIP_S = 10


def nexara(http: httpx.Client, clip: bytes, poll_s: float) -> str:
    answer = http.post("/v1/audio/transcriptions", files={"file": ("clip.wav", clip)}, headers=_bearer())
    answer.raise_for_status()
    return str(answer.json()["text"])


def deepgram(http: httpx.Client, clip: bytes, poll_s: float) -> str:
    headers = {"Authorization": f"Token {KEY}", "Content-Type": "audio/wav"}
    answer = http.post("/v1/listen", params={"model": "nova-3", "smart_format": "true"}, content=clip, headers=headers)
    answer.raise_for_status()
    return str(answer.json()["results"]["channels"][0]["alternatives"][0]["transcript"])


def asr_webservice(http: httpx.Client, clip: bytes, poll_s: float) -> str:
    answer = http.post("/asr", params={"output": "json"}, files={"audio_file": ("clip.wav", clip)})
    answer.raise_for_status()
    return str(answer.json()["text"])


def our_job(http: httpx.Client, clip: bytes, poll_s: float) -> str:
    submitted = http.post("/v1/audio/transcriptions/async", files={"file": ("clip.wav", clip)}, headers=_bearer())
    submitted.raise_for_status()
    job_id = submitted.json()["job_id"]
    while True:
        job = http.get(f"/v1/audio/transcriptions/async/{job_id}", headers=_bearer()).json()
        if job["status"] not in ("queued", "in_progress"):
            return str(job["result"]["text"])
        time.sleep(poll_s)


def assemblyai(http: httpx.Client, clip: bytes, poll_s: float) -> str:
    headers = {"Authorization": KEY}
    upload = http.post("/v2/upload", content=clip, headers=headers)
    upload.raise_for_status()
    created = http.post("/v2/transcript", json={"audio_url": upload.json()["upload_url"]}, headers=headers)
    created.raise_for_status()
    transcript_id = created.json()["id"]
    while True:
        transcript = http.get(f"/v2/transcript/{transcript_id}", headers=headers).json()
        if transcript["status"] in ("completed", "error"):
            return str(transcript["text"])
        time.sleep(poll_s)


def _bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}"}


Call = Callable[[httpx.Client, bytes, float], str]
PAIRS: list[tuple[str, Call, str, Call]] = [
    ("deepgram POST /v1/listen", deepgram, "nexara POST /v1/audio/transcriptions", nexara),
    ("whisper-asr-webservice POST /asr", asr_webservice, "nexara POST /v1/audio/transcriptions", nexara),
    ("assemblyai upload+transcript+polls", assemblyai, "our job: submit+polls", our_job),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--poll-ms", type=float, default=100)
    args = parser.parse_args()
    clip = encode(decode_audio(pyannote_sample()).samples[: CLIP_S * 16_000], "wav")
    asr = {"asr_webservice": {"enabled": True, "api_key_name": "benchmark"}}
    calls = {name: call for pair in PAIRS for name, call in (pair[:2], pair[2:])}
    took: dict[str, list[float]] = {name: [] for name in calls}
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(Path(workdir), [KEY], unthrottled=True, app_args=asr) as service,
        httpx.Client(base_url=service.base_url, timeout=300) as http,
    ):
        for call in calls.values():  # warm up every path once
            call(http, clip, args.poll_ms / 1000)
        for _ in range(args.rounds):
            for name, call in calls.items():
                started = time.perf_counter()
                text = call(http, clip, args.poll_ms / 1000)
                took[name].append(time.perf_counter() - started)
                assert text.strip(), f"{name} answered no words"
    print(f"a {CLIP_S} s clip, {args.rounds} rounds interleaved, p50 seconds (ratio to the baseline beside it)")
    for name, _, baseline, _ in PAIRS:
        ours, theirs = percentile(took[name], 0.5), percentile(took[baseline], 0.5)
        print(f"{name:38} {ours:6.3f} s   vs {baseline:38} {theirs:6.3f} s   ratio {ours / theirs:5.2f}")


if __name__ == "__main__":
    main()
