"""Live sessions at real time: latency of each word, whether the service keeps up, and the transcript's
accuracy against the same audio sent as a file (the baseline), on one freshly started local service.

For each session count N (`--sessions 1,2,4`), N sessions of the nexara SDK's realtime client stream the
pyannote call (30 s, two speakers), paced at real time in 100 ms frames, starting together. A word's
latency is the time from the moment its last audio frame was sent to the moment its `transcript` event
arrived; a final word's latency, the same to the `turn.end` holding it (the turn's words: each utterance read
again whole with `--final-passes full`, the streamed words with `none`; sessions open with Smart Turn, so a turn
it finds unfinished ends 3 s after its speech, as nexara's do). A session keeps up when, after its last frame,
`session.ended` comes within --keep-up-s (the column "words flush": the last `transcript` event, i.e. the
streaming alone, without the last utterance's second reading).
Accuracy: the WER of the streamed text and of the file transcription (json, same service, same audio),
both against the call's reference transcript.

Each model runs once per encoder window (`--windows full,audio`: `live.encoder_window`) and final pass
(`--final-passes none,full,audio`: `live.final_pass`, each group of utterances read again whole at its end for
the session's text), on a fresh service, so that each is measured beside the other in the same run.

Cost (issue 61), from the Transcriber's own metrics (`stt_transcriber_compute_seconds{lane,stage}`): the engine
seconds the sessions' readings took (streaming readings in the interactive lane, second readings in their own),
per session, against what the file transcription of the same call took: "live ÷ file" (encoder and decoder
apart in the `--cost` table printed after each service). Those are wall seconds, which grow while the engine's
threads wait for a core (four sessions' readings beside their second readings are more threads than two cores):
"cpu ÷ file" is the same ratio in the Transcriber processes' processor seconds. "read again": the groups of
utterances read again of all that ended, and in brackets why the others kept their streamed words
(`stt_live_second_readings{outcome}`).

    .venv/bin/python -m scripts.bench_live [--models embedded:tiny.en,embedded:base] [--sessions 1,2,4,8]
        [--windows full,audio] [--final-passes none,full,audio] [--delay-ms 480] [--diarize]
        [--batching lane_batches=1 ...] [--live max_buffer_s=5 ...]
"""

import argparse
import asyncio
import itertools
import math
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from nexara import AsyncNexara
from nexara.types.realtime import RealtimeTranscript, RealtimeTurnEnd

from deployments.files.decoding import decode_audio
from devkit.faults import processes_of
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile
from devkit.prometheus import Samples, settled, value
from devkit.wer import stm_transcript, word_error_rate

KEY = "bench"
FRAME_S = 0.1
METRICS_MS = 1000  # how often Ray exports the metrics read here
LABELS = {"lane", "stage", "outcome"}
STAGES = ("encoder", "decoder", "alignment", "features")


def compute(before: Samples, after: Samples, lanes: tuple[str, ...]) -> dict[str, float]:
    """Engine seconds by stage spent in `lanes` between two scrapes."""
    name = "ray_stt_transcriber_compute_seconds_total"
    return {
        stage: sum(
            value(after, name, lane=lane, stage=stage) - value(before, name, lane=lane, stage=stage) for lane in lanes
        )
        for stage in STAGES
    }


def cpu_seconds(service: LocalService) -> float:
    """The Transcriber replicas' processor seconds so far (user and system), for "cpu ÷ file"."""
    times = [process.cpu_times() for process in processes_of(service, "Transcriber")]
    return sum(t.user + t.system for t in times)


def outcomes(before: Samples, after: Samples) -> dict[str, int]:
    name = "ray_stt_live_second_readings_total"
    found = {dict(labels).get("outcome", "") for (sample, labels) in after if sample == name}
    return {o: round(value(after, name, outcome=o) - value(before, name, outcome=o)) for o in sorted(found) if o}


@dataclass
class SessionRun:
    latencies_s: list[float] = field(default_factory=list)
    final_latencies_s: list[float] = field(default_factory=list)
    flush_s: float = math.nan
    words_flush_s: float = 0.0
    """From the last frame to the last `transcript` event (0 if it came before): the streaming's own flush."""
    wall_s: float = math.nan
    text: str = ""


async def one_session(client: AsyncNexara, pcm: bytes, diarize: bool, delay_ms: int) -> SessionRun:
    run = SessionRun()
    frame = int(16_000 * FRAME_S) * 2
    loop = asyncio.get_running_loop()
    connect = client.realtime.connect(diarize=diarize, delay_ms=delay_ms, turn_detection="smart")
    async with connect as session:
        started = loop.time()
        audio_ends = started + len(pcm) / 32_000  # when the last frame is sent

        async def frames():  # noqa: ANN202
            for index, offset in enumerate(range(0, len(pcm), frame)):
                yield pcm[offset : offset + frame]
                await asyncio.sleep(max(0.0, started + (index + 1) * FRAME_S - loop.time()))

        async for event in session.stream(frames()):
            if isinstance(event, RealtimeTranscript | RealtimeTurnEnd):
                now = loop.time()
                if isinstance(event, RealtimeTranscript):
                    run.words_flush_s = max(0.0, now - audio_ends)
                latencies = run.latencies_s if isinstance(event, RealtimeTranscript) else run.final_latencies_s
                for word in event.words:  # sent when the frame holding its last sample was sent
                    sent_at = started + math.ceil(word.end / 1000 / FRAME_S) * FRAME_S
                    latencies.append(now - sent_at)
        finished = loop.time()
        run.flush_s = finished - audio_ends
        run.wall_s = finished - started
        text = session.ended.text if session.ended else ""
        assert isinstance(text, str)  # one channel: one text, not a list per channel
        run.text = text
    return run


async def measure(base_url: str, pcm: bytes, sessions: int, diarize: bool, delay_ms: int) -> list[SessionRun]:
    client = AsyncNexara(api_key=KEY, base_url=f"{base_url}/v1", streaming_url=base_url.replace("http", "ws"))
    return await asyncio.gather(*(one_session(client, pcm, diarize, delay_ms) for _ in range(sessions)))


def _setting(item: str) -> tuple[str, object]:
    """`KEY=VALUE`, the value read as YAML (a number stays a number)."""
    key, equals, value = item.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{item!r} is not KEY=VALUE")
    return key, yaml.safe_load(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:tiny.en,embedded:base")
    parser.add_argument("--sessions", default="1,2,4,8")
    parser.add_argument("--windows", default="full,audio")
    parser.add_argument("--final-passes", default="full")
    parser.add_argument("--delay-ms", type=int, default=480)
    parser.add_argument("--diarize", action="store_true")
    parser.add_argument("--keep-up-s", type=float, default=3.0)
    parser.add_argument(
        "--batching",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="the Transcriber's user_config over the local config's (e.g. lane_batches=1); repeatable",
    )
    parser.add_argument(
        "--live",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="a live setting over the local config's (e.g. max_buffer_s=5); repeatable",
    )
    args = parser.parse_args()

    call = decode_audio(pyannote_sample()).samples
    pcm = (call * 32767).astype("<i2").tobytes()
    reference = stm_transcript(pyannote_sample().with_suffix(".stm"))
    print(f"pyannote call, 30 s, streamed at real time; delay_ms {args.delay_ms}, diarize {args.diarize}")
    print("model             window  final pass  sessions  p50 latency(s)  p95 latency(s)  final p50(s)  final p95(s)"
          "  flush after end(s)  words flush(s)  real-time factor  kept up  WER    WER-file  file(s)"
          "  live÷file  cpu÷file  read again")  # fmt: skip
    counts = [int(n) for n in args.sessions.split(",")]
    batching = dict(args.batching)
    for model in args.models.split(","):
        for window, final_pass in itertools.product(args.windows.split(","), args.final_passes.split(",")):
            live = {"encoder_window": window, "final_pass": final_pass, "max_sessions_per_key": max(counts)}
            live |= dict(args.live)
            with LocalService(
                Path(tempfile.mkdtemp()),
                [KEY],
                model=model,
                unthrottled=True,
                live=live,
                batching=batching,
                metrics_interval_ms=METRICS_MS,
            ) as service:
                metrics = service.metrics_url()
                headers = {"Authorization": f"Bearer {KEY}"}
                asyncio.run(measure(service.base_url, pcm[: 3 * 32_000], 1, args.diarize, args.delay_ms))  # warm up
                with httpx.Client(base_url=service.base_url, headers=headers, timeout=600) as http:
                    http.post("/v1/audio/transcriptions", files={"file": ("call.flac", encode(call, "flac"))})  # warm
                    before = settled(metrics, LABELS, 2 * METRICS_MS / 1000)
                    started, cpu_before = time.perf_counter(), cpu_seconds(service)
                    filed = http.post("/v1/audio/transcriptions", files={"file": ("call.flac", encode(call, "flac"))})
                    file_s, file_cpu = time.perf_counter() - started, cpu_seconds(service) - cpu_before
                    filed.raise_for_status()
                file_cost = compute(before, settled(metrics, LABELS, 2 * METRICS_MS / 1000), ("interactive", "jobs"))
                file_wer = word_error_rate(reference, filed.json()["text"])
                costs = []
                for count in counts:
                    before = settled(metrics, LABELS, 2 * METRICS_MS / 1000)
                    cpu_before = cpu_seconds(service)
                    runs = asyncio.run(measure(service.base_url, pcm, count, args.diarize, args.delay_ms))
                    cpu_ratio = (cpu_seconds(service) - cpu_before) / count / file_cpu
                    after = settled(metrics, LABELS, 2 * METRICS_MS / 1000)
                    streaming = compute(before, after, ("interactive",))
                    second = compute(before, after, ("second readings",))
                    ratio = (sum(streaming.values()) + sum(second.values())) / count / sum(file_cost.values())
                    became = outcomes(before, after)
                    skipped = ",".join(f"{o} {n}" for o, n in became.items() if o != "read" and n)
                    read_again = f"{became.get('read', 0)}/{sum(became.values())}"
                    read_again += f" ({skipped})" if skipped else ""
                    costs.append((count, streaming, second))
                    latencies = [value for run in runs for value in run.latencies_s]
                    flush = max(run.flush_s for run in runs)
                    words_flush = max(run.words_flush_s for run in runs)
                    factor = statistics.mean(run.wall_s for run in runs) / (len(pcm) / 32_000)
                    live_wer = statistics.mean(word_error_rate(reference, run.text) for run in runs)
                    kept_up = "yes" if flush <= args.keep_up_s else "no"
                    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
                    finals = [value for run in runs for value in run.final_latencies_s] or [math.nan]
                    final50, final95 = percentile(finals, 0.5), percentile(finals, 0.95)
                    print(f"{model.removeprefix('embedded:'):<16}  {window:>6}  {final_pass:>10}  {count:>8}"
                          f"  {p50:14.2f}  {p95:14.2f}  {final50:12.2f}  {final95:12.2f}"
                          f"  {flush:18.2f}  {words_flush:14.2f}  {factor:16.2f}  {kept_up:>7}"
                          f"  {live_wer:5.1%}  {live_wer - file_wer:+7.1%}  {file_s:7.2f}  {ratio:8.2f}x"
                          f"  {cpu_ratio:7.2f}x  {read_again:>10}", flush=True)  # fmt: skip
                print_cost(model, file_cost, costs, len(pcm) / 32_000)


def print_cost(
    model: str, file_cost: dict[str, float], costs: list[tuple[int, dict[str, float], dict[str, float]]], audio_s: float
) -> None:
    """Engine seconds per second of audio per session, by stage: the file's, the streaming's, the second readings'."""

    def row(label: str, spent: dict[str, float], sessions: int = 1) -> str:
        per_s = [spent[stage] / sessions / audio_s for stage in STAGES]
        return f"  {label:<34}" + "".join(f"  {v:9.3f}" for v in per_s) + f"  {sum(per_s):9.3f}"

    print(f"  {model}: engine s per audio s, per session" + "".join(f"  {s:>9}" for s in (*STAGES, "all")))
    print(row("the call as a file (json)", file_cost))
    for count, streaming, second in costs:
        print(row(f"{count} sessions: streaming readings", streaming, count))
        print(row(f"{count} sessions: second readings", second, count))


if __name__ == "__main__":
    main()
