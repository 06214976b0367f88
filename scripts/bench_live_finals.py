"""Live final transcripts on the default model, as the `openai` SDK's realtime client gets them (issue 61).

On one fresh local service (`configs/local.yaml`, the model named; default Whisper base), all at real time:
1. jfk.flac (from ../shared) streamed `--jfk-runs` times, one session after another: each run's `completed`
   transcripts joined, against the reference (WER; 22 words: one wrong word is 0.045);
2. pyannote's call (30 s, two speakers) in one session: the `completed` transcripts joined, against the same call
   transcribed as a file by the same service (how far the live finals are from the file's words) and against
   the call's reference;
   (each session ends as the service's idle timeout, 3 s here, ends it: what was heard is transcribed first)
3. `--sessions` sessions of the call at once: each one's flush (from its last audio to its last `completed`) and
   its finals' distance from the file's words.
The groups of utterances read again, of all that ended, come from the service's `stt_live_second_readings`.

    .venv/bin/python -m scripts.bench_live_finals [--model embedded:base] [--jfk-runs 5] [--sessions 2]
"""

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

import httpx

from deployments.files.decoding import decode_audio
from devkit.local_service import LocalService
from devkit.media import JFK_REFERENCE, SHARED_AUDIO, encode, pyannote_sample
from devkit.prometheus import settled, value
from devkit.realtime import COMPLETED, pcm24k, transcription_session
from devkit.wer import differences, stm_transcript, word_error_rate

KEY = "bench"
IDLE_S = 3  # the service's live.idle_timeout_s: a session that sent its last audio ends this long after


def finals(received: list[tuple[float, Any]]) -> str:
    return " ".join(event.transcript for _, event in received if event.type == COMPLETED)


def flush_s(received: list[tuple[float, Any]], sent_at: float) -> float:
    return max((at for at, event in received if event.type == COMPLETED), default=sent_at) - sent_at


async def sessions_at_once(base_url: str, pcm: bytes, count: int) -> list[tuple[list[tuple[float, Any]], float]]:
    return await asyncio.gather(*(transcription_session(base_url, KEY, pcm) for _ in range(count)))


def read_again(metrics: str) -> str:
    samples = settled(metrics, {"outcome"}, 2.0)
    name = "ray_stt_live_second_readings_total"
    outcomes = {dict(labels).get("outcome", "") for (sample, labels) in samples if sample == name}
    counts = {o: round(value(samples, name, outcome=o)) for o in sorted(outcomes) if o}
    return f"{counts.get('read', 0)} of {sum(counts.values())} groups read again ({counts})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--jfk-runs", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=2)
    args = parser.parse_args()
    call = decode_audio(pyannote_sample()).samples
    reference = stm_transcript(pyannote_sample().with_suffix(".stm"))
    jfk = SHARED_AUDIO / "jfk.flac"
    live_config = {"idle_timeout_s": IDLE_S, "max_sessions_per_key": max(2, args.sessions)}
    with LocalService(
        Path(tempfile.mkdtemp()), [KEY], model=args.model, unthrottled=True, metrics_interval_ms=1000, live=live_config
    ) as service:
        metrics = service.metrics_url()
        with httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as http:
            filed = http.post("/v1/audio/transcriptions", files={"file": ("call.wav", encode(call, "wav"))})
            filed.raise_for_status()
        file_text = filed.json()["text"]
        print(f"{args.model}: the call as a file, WER {word_error_rate(reference, file_text):.3f}", flush=True)
        if jfk.exists() and args.jfk_runs:
            pcm = pcm24k(decode_audio(jfk).samples)
            rates = []
            for _ in range(args.jfk_runs):
                received, _ = asyncio.run(transcription_session(service.base_url, KEY, pcm))
                rates.append(word_error_rate(JFK_REFERENCE, finals(received)))
                print(f"  jfk: WER {rates[-1]:.3f}  {finals(received)!r}", flush=True)
            print(f"1. jfk x{args.jfk_runs}: WER {[round(r, 3) for r in rates]}, at most {max(rates):.3f}", flush=True)
        else:
            print("1. jfk: skipped (../shared/audio/jfk.flac is not here, or --jfk-runs 0)", flush=True)
        pcm = pcm24k(call)
        received, sent_at = asyncio.run(transcription_session(service.base_url, KEY, pcm))
        live = finals(received)
        print(
            f"2. the call: finals {word_error_rate(file_text, live):.3f} from the file's words, WER"
            f" {word_error_rate(reference, live):.3f}; flush {flush_s(received, sent_at):.2f} s",
            flush=True,
        )
        print(f"   where they differ: {'; '.join(differences(file_text, live))}", flush=True)
        runs = asyncio.run(sessions_at_once(service.base_url, pcm, args.sessions))
        distances = [word_error_rate(file_text, finals(r)) for r, _ in runs]
        flushes = [flush_s(r, sent) for r, sent in runs]
        print(
            f"3. {args.sessions} sessions at once: flush {[round(f, 2) for f in flushes]} s (at most"
            f" {max(flushes):.2f}); finals from the file's words {[round(d, 3) for d in distances]} (mean"
            f" {statistics.mean(distances):.3f})",
            flush=True,
        )
        print(f"   {read_again(metrics)}", flush=True)


if __name__ == "__main__":
    main()
