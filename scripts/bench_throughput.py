"""Throughput benchmark: the service against faster-whisper on the same model and settings, as one table.

Every row is measured in this run on this machine, one after another (never at once: they share the CPU).
The direct baselines run before the service starts, so that Ray's processes do not slow them, and the two
the service must beat (`BatchedInferencePipeline` on the long recording, the short clips one after another)
run again after it stopped: their rows show the mean of both runs. This machine's speed drifts by tens of
percent within minutes, so one baseline run minutes before the service's would compare two different machines.

1. A long recording (default 10 min) built from real speech with references: jfk.flac (from ../shared,
   when present) and the two-speaker call that pyannote.audio ships, 1 s of silence between clips.
   The service end to end vs. sequential `WhisperModel.transcribe` and vs. `BatchedInferencePipeline`.
   The service is timed twice: response_format=json (the default; text only, so it decodes without
   timestamp tokens, as BatchedInferencePipeline does) and verbose_json (timed segments, as sequential).
2. 16 concurrent 10-second requests vs. the same clips transcribed one after another by faster-whisper:
   audio seconds per wall second, both response formats.
3. Synchronous overhead: one 10-second request (verbose_json: the same work) vs. the direct engine call,
   medians of --runs.
4. The transformers engine vs. the CTranslate2 engine on the same weights and the same clips.
5. Timed output: timestamp tokens (before) vs. text-only decoding timed by alignment (now), on the engine,
   with WER and how far the word and subtitle times moved.
6. The long recording with 4 short requests arriving 10 s into it: how the Transcriber's batches came out
   (sections 1 and 2 print theirs too) and how soon the short requests were answered.

Every side decodes the same WAV bytes, so decoding counts on both. WER is jiwer's, after normalization.

    .venv/bin/python -m scripts.bench_throughput [--model embedded:base] [--minutes 10] [--runs 5] [--gpu]
        [--no-service]
"""

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import httpx
import numpy as np
import yaml
from faster_whisper import BatchedInferencePipeline, WhisperModel

from deployments.config import BatchingConfig, WhisperModelConfig
from deployments.files._assembly import join_chunks
from deployments.files._chunking import SpeechChunker, chunk_audio
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines import load_engine
from deployments.transcriber.engines.base import WhisperEngine
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Transcript
from devkit.local_service import ROOT, LocalService
from devkit.media import JFK_REFERENCE, SHARED_AUDIO, encode, pyannote_sample
from devkit.percentiles import percentile
from devkit.wer import matched_words, stm_transcript, word_error_rate
from serve_app.http_app import AppArgs

CONCURRENT_REQUESTS = 16
BASELINE_BATCH_SIZE = 8  # BatchedInferencePipeline's, and the engines' in sections 4 and 5
WARM_UP_S = 240  # long enough for a full batch of chunks
LOG_DELAY_S = 2  # Ray forwards a replica's log lines to `serve run` a moment after they are written
RESPONSE_FORMATS = {
    "json": "text only: decoded without timestamp tokens",
    "verbose_json": "timed segments, as faster-whisper sequential",
}
SHORT_CLIP_S = 10
SHORT_DURING_LONG = 4  # short requests sent while the long recording is being transcribed
SHORT_AFTER_S = 10.0


@dataclass
class Clip:
    name: str
    samples: np.ndarray
    reference: str = ""

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    @property
    def wav(self) -> bytes:
        return encode(self.samples, "wav")


@dataclass
class Row:
    section: str
    what: str
    seconds: float
    audio_s: float
    wer: float | None = None
    note: str = ""


def reference_clips() -> list[Clip]:
    sample = pyannote_sample()
    clips = [Clip("sample.wav", decode_audio(sample).samples, stm_transcript(sample.with_suffix(".stm")))]
    jfk = SHARED_AUDIO / "jfk.flac"
    if jfk.exists():
        clips.insert(0, Clip("jfk.flac", decode_audio(jfk).samples, JFK_REFERENCE))
    return clips


def long_recording(clips: list[Clip], seconds: float) -> Clip:
    """Whole clips, 1 s of silence after each, until the recording is at least `seconds` long."""
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    pieces, references, total = [], [], 0
    while total < seconds * SAMPLE_RATE:
        for clip in clips:
            pieces += [clip.samples, silence]
            references.append(clip.reference)
            total += len(clip.samples) + len(silence)
    recording = np.concatenate(pieces)
    return Clip(f"{len(recording) / SAMPLE_RATE / 60:.1f} min recording", recording, " ".join(references))


def short_clips(clips: list[Clip], count: int) -> list[Clip]:
    """`count` 10-second windows of the clips' speech, cycled."""
    windows = [
        clip.samples[start : start + SHORT_CLIP_S * SAMPLE_RATE]
        for clip in clips
        for start in range(0, len(clip.samples) - SHORT_CLIP_S * SAMPLE_RATE + 1, SHORT_CLIP_S * SAMPLE_RATE)
    ]
    return [Clip(f"10 s clip {i}", windows[i % len(windows)]) for i in range(count)]


def timed(work: Callable[[], str]) -> tuple[float, str]:
    started = time.perf_counter()
    text = work()
    return time.perf_counter() - started, text


class FasterWhisperBaseline:
    """faster-whisper called directly, as a script would: sequential and batched."""

    def __init__(self, whisper: WhisperModelConfig, batch_size: int) -> None:
        self.whisper = whisper
        self.batch_size = batch_size
        self.model: WhisperModel = CTranslate2Engine(whisper).model  # the same WhisperModel, same settings
        self.batched = BatchedInferencePipeline(self.model)

    def sequential(self, wav: bytes) -> str:
        segments, _ = self.model.transcribe(
            decode_audio(wav).samples, beam_size=self.whisper.beam_size, vad_filter=True
        )
        return " ".join(segment.text for segment in segments)  # a generator: decoding happens here

    def batched_pipeline(self, wav: bytes) -> str:
        segments, _ = self.batched.transcribe(
            decode_audio(wav).samples, beam_size=self.whisper.beam_size, batch_size=self.batch_size, vad_filter=True
        )
        return " ".join(segment.text for segment in segments)


def engine_rows(clips: list[Clip], whisper: WhisperModelConfig, batch_size: int, gpu: bool) -> list[Row]:
    """Both engines on the same weights and the same VAD chunks, batched alike; time after one warm-up."""
    chunker = SpeechChunker(use_vad=True)
    chunks = [
        (index, chunk_audio(clip.samples, pieces))
        for index, clip in enumerate(clips)
        for pieces in chunker.chunks(clip.samples)
    ]
    precision = "float16" if gpu else "float32"
    variants = {  # by label: on GPU the first two are the same
        f"ctranslate2 {whisper.compute_type}": {"engine": "ctranslate2"},
        f"ctranslate2 {precision}": {"engine": "ctranslate2", "compute_type": precision},
        f"transformers {precision}": {"engine": "transformers"},
    }
    audio_s = sum(clip.seconds for clip in clips)
    rows = []
    for label, overrides in variants.items():
        engine = load_engine(whisper.model_copy(update=overrides))
        options = ChunkOptions()  # language detected, as for a request without one

        def run(engine: WhisperEngine = engine, options: ChunkOptions = options) -> list[str]:
            texts = [""] * len(clips)
            for start in range(0, len(chunks), batch_size):
                batch = chunks[start : start + batch_size]
                decoded = engine.transcribe_batch([chunk for _, chunk in batch], options)
                for (index, _), transcript in zip(batch, decoded, strict=True):
                    texts[index] += " " + "".join(segment.text for segment in transcript.segments)
            return texts

        run()
        started = time.perf_counter()
        texts = run()
        seconds = time.perf_counter() - started
        wer = statistics.mean(word_error_rate(clip.reference, text) for clip, text in zip(clips, texts, strict=True))
        rows.append(Row("4. engines, same weights", label, seconds, audio_s, wer, f"{len(chunks)} chunks"))
        del engine
    return rows


def timestamp_rows(clips: list[Clip], whisper: WhisperModelConfig, batch_size: int) -> list[Row]:
    """Timed segments decoded with Whisper's timestamp tokens (before) against text-only decoding timed by
    alignment (now), on the same chunks and weights, batched alike; and the text alone for reference.

    Accuracy is measured with words asked for on both sides (the words both decodes have, matched in order),
    and on the segments' starts (where a cue started when srt had a cue per segment): each timestamp-token
    segment's start compared with the nearest segment start of the alignment's."""
    chunker = SpeechChunker(use_vad=True)
    spans = [chunker.chunks(clip.samples) for clip in clips]
    chunks = [(index, chunk_audio(clip.samples, pieces)) for index, clip in enumerate(clips) for pieces in spans[index]]
    audio_s = sum(clip.seconds for clip in clips)
    engines = {
        mode: CTranslate2Engine(whisper.model_copy(update={"timestamps": mode})) for mode in ("tokens", "alignment")
    }

    def run(engine: CTranslate2Engine, options: ChunkOptions) -> list[list[ChunkTranscript]]:
        per_clip: list[list[ChunkTranscript]] = [[] for _ in clips]
        for start in range(0, len(chunks), batch_size):
            batch = chunks[start : start + batch_size]
            for (index, _), transcript in zip(
                batch, engine.transcribe_batch([c for _, c in batch], options), strict=True
            ):
                per_clip[index].append(transcript)
        return per_clip

    def transcripts(per_clip: list[list[ChunkTranscript]]) -> list[Transcript]:
        return [
            join_chunks(chunk_transcripts, clip_spans, clip.seconds, "en")
            for chunk_transcripts, clip_spans, clip in zip(per_clip, spans, clips, strict=True)
        ]

    def mean_wer(timed: list[Transcript]) -> float:
        return statistics.mean(word_error_rate(c.reference, t.text) for c, t in zip(clips, timed, strict=True))

    variants = {  # label: (engine, options, note)
        "text only (json)": ("alignment", ChunkOptions(segment_timestamps=False), "no timestamps: the speed to reach"),
        "timestamp tokens (before)": ("tokens", ChunkOptions(), ""),
        "text only + alignment (now)": ("alignment", ChunkOptions(), ""),
    }
    rows, timed = [], {}
    for label, (mode, options, note) in variants.items():
        run(engines[mode], options)  # warm-up
        started = time.perf_counter()
        timed[label] = transcripts(run(engines[mode], options))
        seconds = time.perf_counter() - started
        segments = sum(len(transcript.segments) for transcript in timed[label])
        rows.append(
            Row(
                "5. timed output, engine",
                label,
                seconds,
                audio_s,
                mean_wer(timed[label]),
                note or f"{segments} segments",
            )
        )

    words = {mode: transcripts(run(engine, ChunkOptions(word_timestamps=True))) for mode, engine in engines.items()}
    word_starts = [
        abs(ours.start - theirs.start)
        for before, now in zip(words["tokens"], words["alignment"], strict=True)
        for theirs, ours in matched_words(before.words, now.words)
    ]
    cue_starts = []
    for before, now in zip(timed["timestamp tokens (before)"], timed["text only + alignment (now)"], strict=True):
        now_starts = np.array([segment.start for segment in now.segments if segment.text.strip()])
        cue_starts += [  # a segment's start: where its cue started when a cue was a segment
            np.abs(now_starts - segment.start).min() for segment in before.segments if segment.text.strip()
        ]
    rows[-1].note += (
        f"; word starts vs tokens: median {statistics.median(word_starts):.3f} s,"
        f" 90th pct {percentile(word_starts, 0.9):.2f} s ({len(word_starts)} words);"
        f" SRT cue starts: median {statistics.median(cue_starts):.3f} s to the nearest"
    )
    return rows


async def _post_all(base_url: str, clips: list[Clip], response_format: str) -> list[str]:
    headers = {"Authorization": "Bearer bench"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=1800) as client:

        async def post(clip: Clip) -> str:
            response = await client.post(
                "/v1/audio/transcriptions",
                files={"file": ("clip.wav", clip.wav)},
                data={"response_format": response_format},
            )
            response.raise_for_status()
            return response.json()["text"]

        return await asyncio.gather(*(post(clip) for clip in clips))


async def _long_with_short_during_it(base_url: str, long: Clip, short: list[Clip], after_s: float) -> list[float]:
    """The long recording, and `after_s` into it the short clips at once: each one's answer time, the
    long one's last."""

    async def timed_post(clips: list[Clip]) -> float:
        started = time.perf_counter()
        await _post_all(base_url, clips, "json")
        return time.perf_counter() - started

    long_run = asyncio.ensure_future(timed_post([long]))
    await asyncio.sleep(after_s)
    short_s = await asyncio.gather(*(timed_post([clip]) for clip in short))
    return [*short_s, await long_run]


def batch_sizes(service: LocalService, since: int) -> str:
    """The Transcriber's batch sizes logged since `since` characters of the service's log (it logs each
    batch: "decoded N chunks")."""
    time.sleep(LOG_DELAY_S)
    log = service.log_path.read_text(errors="replace")[since:]
    return "+".join(re.findall(r"decoded (\d+) chunks", log)) or "none"


def log_size(service: LocalService) -> int:
    return len(service.log_path.read_text(errors="replace"))


def post_concurrently(base_url: str, clips: list[Clip], response_format: str = "json") -> str:
    """The clips' texts; json (the default) asks for text only, verbose_json for timed segments too."""
    return " ".join(asyncio.run(_post_all(base_url, clips, response_format)))


@dataclass
class Workload:
    recording: Clip
    short: list[Clip]
    runs: int

    @property
    def single(self) -> Clip:
        return self.short[0]

    @property
    def long_title(self) -> str:
        return f"1. one {self.recording.name}"

    @property
    def many_title(self) -> str:
        return f"2. {len(self.short)} concurrent 10 s requests"


def baseline_rows(work: Workload, baseline: FasterWhisperBaseline) -> list[Row]:
    recording = work.recording
    # Warm-ups: the engine's first batch of a size allocates its buffers, so each side runs one first.
    baseline.sequential(work.single.wav)
    baseline.batched_pipeline(encode(recording.samples[: WARM_UP_S * SAMPLE_RATE], "wav"))
    seconds, text = timed(lambda: baseline.sequential(recording.wav))
    wer = word_error_rate(recording.reference, text)
    rows = [Row(work.long_title, "faster-whisper sequential", seconds, recording.seconds, wer, "timed segments")]
    rows += compared_baseline_rows(work, baseline)
    direct = statistics.median(timed(lambda: baseline.sequential(work.single.wav))[0] for _ in range(work.runs))
    rows.append(Row("3. one 10 s request", "faster-whisper directly", direct, work.single.seconds))
    return rows


def compared_baseline_rows(work: Workload, baseline: FasterWhisperBaseline) -> list[Row]:
    """The two baselines the service's goals are set against (sections 1 and 2)."""
    recording, short = work.recording, work.short
    seconds, text = timed(lambda: baseline.batched_pipeline(recording.wav))
    wer = word_error_rate(recording.reference, text)
    note = "text only: one segment per chunk"
    rows = [Row(work.long_title, "faster-whisper BatchedInferencePipeline", seconds, recording.seconds, wer, note)]
    seconds, _ = timed(lambda: " ".join(baseline.sequential(clip.wav) for clip in short))
    short_s = sum(clip.seconds for clip in short)
    rows.append(Row(work.many_title, "faster-whisper, one after another", seconds, short_s, note="timed segments"))
    return rows


def bracketed(before: list[Row], after: list[Row]) -> list[Row]:
    """Each row timed again after the service stopped becomes the mean of its two runs."""
    again = {(row.section, row.what): row for row in after}
    rows = []
    for row in before:
        late = again.get((row.section, row.what))
        if late is not None:
            note = f"{row.note}; mean of {row.seconds:.1f} s before the service and {late.seconds:.1f} s after"
            row = replace(row, seconds=(row.seconds + late.seconds) / 2, note=note)
        rows.append(row)
    return rows


def service_rows(work: Workload, whisper: WhisperModelConfig, batch_size: int, gpu: bool, direct_s: float) -> list[Row]:
    recording, short = work.recording, work.short
    short_s = sum(clip.seconds for clip in short)
    overrides = whisper.model_dump(include={"model", "device", "compute_type"})
    rows = []
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(Path(workdir), ["bench"], whisper=overrides, gpu=gpu, unthrottled=True) as service,
    ):
        # Warm-ups as the baseline's: a piece of the recording (full batches of long chunks), then short clips.
        post_concurrently(service.base_url, [Clip("warm-up", recording.samples[: WARM_UP_S * SAMPLE_RATE])])
        post_concurrently(service.base_url, short[:batch_size])
        time.sleep(LOG_DELAY_S)  # the warm-ups' batch lines land before the first row's count starts
        for response_format, note in RESPONSE_FORMATS.items():
            since = log_size(service)
            seconds, text = timed(partial(post_concurrently, service.base_url, [recording], response_format))
            wer = word_error_rate(recording.reference, text)
            what = f"service, {response_format}"
            note = f"{note}; batches {batch_sizes(service, since)}"
            rows.append(Row(work.long_title, what, seconds, recording.seconds, wer, note))
        for response_format, note in RESPONSE_FORMATS.items():
            since = log_size(service)
            seconds, _ = timed(partial(post_concurrently, service.base_url, short, response_format))
            note = f"{note}; batches {batch_sizes(service, since)}"
            rows.append(Row(work.many_title, f"service, {response_format}, all at once", seconds, short_s, note=note))
        since = log_size(service)
        during = short[:SHORT_DURING_LONG]
        *short_answers, long_s = asyncio.run(
            _long_with_short_during_it(service.base_url, recording, during, SHORT_AFTER_S)
        )
        note = (
            f"json; {len(during)} 10 s requests {SHORT_AFTER_S:.0f} s in, answered in "
            + ", ".join(f"{answer:.1f}" for answer in short_answers)
            + f" s; batches {batch_sizes(service, since)}"
        )
        audio_s = recording.seconds + sum(clip.seconds for clip in during)
        rows.append(Row(f"6. {recording.name} + short requests", "service, all in one run", long_s, audio_s, note=note))
        # Overhead is measured on the same work as the direct call: timed segments.
        served = statistics.median(
            timed(lambda: post_concurrently(service.base_url, [work.single], "verbose_json"))[0]
            for _ in range(work.runs)
        )
        note = f"verbose_json; ratio {served / direct_s:.2f}"
        rows.append(Row("3. one 10 s request", "service", served, work.single.seconds, note=note))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--runs", type=int, default=5, help="repetitions of the single-request overhead test")
    parser.add_argument("--gpu", action="store_true", help="run Whisper on CUDA (float16) on both sides")
    parser.add_argument(
        "--no-service", action="store_true", help="only the rows that need no Ray: faster-whisper and the engines"
    )
    args = parser.parse_args()

    local = yaml.safe_load((ROOT / "configs" / "local.yaml").read_text())["applications"][0]
    served = AppArgs.model_validate(local["args"]).whisper.model_copy(update={"model": args.model})
    # faster-whisper as a script runs it, and the engines in one process: every core on one batch at a time.
    whisper = served.model_copy(update={"cpu_threads": len(os.sched_getaffinity(0))})
    if args.gpu:
        whisper = whisper.model_copy(update={"device": "cuda", "compute_type": "float16"})
    transcriber = next(d for d in local["deployments"] if d["name"] == "Transcriber")
    service_batching = BatchingConfig.model_validate(transcriber["user_config"])
    batch_size = BASELINE_BATCH_SIZE

    clips = reference_clips()
    work = Workload(long_recording(clips, args.minutes * 60), short_clips(clips, CONCURRENT_REQUESTS), args.runs)
    baseline = FasterWhisperBaseline(whisper, batch_size)
    rows = baseline_rows(work, baseline)
    if not args.no_service:
        service = service_rows(work, whisper, batch_size, args.gpu, direct_s=rows[-1].seconds)
        rows = bracketed(rows, compared_baseline_rows(work, baseline)) + service
    del baseline
    rows += engine_rows(clips, whisper, batch_size, args.gpu)
    rows += timestamp_rows(clips, whisper, batch_size)
    print_table(rows, whisper, batch_size, served, service_batching)


def print_table(
    rows: list[Row], whisper: WhisperModelConfig, batch_size: int, served: WhisperModelConfig, batching: BatchingConfig
) -> None:
    print(
        f"model {whisper.model}, {whisper.device} {whisper.compute_type}, beam {whisper.beam_size}, VAD on; "
        f"faster-whisper and the engines: batch size {batch_size}, {whisper.cpu_threads} threads; the service "
        f"(configs/local.yaml): batches of {batching.max_batch_size}, {batching.lane_batches} at once per lane, "
        f"{served.cpu_threads} thread(s) each; speed-up is against the first row of its section"
    )
    print(f"{'section':34s} {'what':42s} {'wall s':>8s} {'audio s/s':>9s} {'speed-up':>8s} {'WER %':>6s}  note")
    sections: dict[str, Row] = {}
    for row in sorted(rows, key=lambda row: row.section):
        first = sections.setdefault(row.section, row)
        wer = f"{row.wer * 100:6.1f}" if row.wer is not None else f"{'':6s}"
        print(
            f"{row.section:34s} {row.what:42s} {row.seconds:8.2f} {row.audio_s / row.seconds:9.2f} "
            f"{first.seconds / row.seconds:7.2f}x {wer}  {row.note}"
        )


if __name__ == "__main__":
    main()
