"""How far a live session's words are from the same audio's words as a file, over every recording at hand: the
call, jfk and, with `../shared`, the AMI meeting excerpts. No service: one channel of a live session
(`deployments/live/_channel.py`) is fed 100 ms frames in this process, and each reading waits for Whisper,
so this measures the streaming policy (buffer, context, LocalAgreement, second readings), not the machine's
capacity (`scripts/bench_live.py` does that, through the service). A second reading runs beside the streaming
(a task); here it runs before the next frame is fed, as on a machine that keeps up: left until the end of
input, utterances would pile up waiting for theirs and keep their streamed words (`MOST_WAITING`), which only
a machine falling behind does.

For each model, encoder window, context (`live.context_s`) and final pass (`live.final_pass`), it prints per
file and in total the word error rate against the file's words (the baseline: what the same model writes when
it reads the whole file) of the streamed words (the `transcript` events) and of the final transcript (the
session's text: with `full` or `audio`, each utterance read again whole when it ends), with the final transcript's
errors by kind (words dropped, written wrong, written extra); the audio a streamed word waited for before it
was final (p50/p95: from its end to the end of the audio read when it became final); how many utterances were
read again, and the compute time of the second readings (p50/max per utterance: what an utterance's final
transcript waits for after its end, beside the last streamed words' reading) and of all readings. Then, per
configuration, where the streaming's compute goes: readings per second of audio, and by the length of the buffer
read, how many readings, their words and their cost per reading (a reading's fixed cost, its encoder window of at
least `whisper.short_window_min_s` and the decoder's prompt, against what each word adds).

    .venv/bin/python -m scripts.bench_live_words [--models embedded:tiny.en] [--windows full,audio]
        [--contexts 0,2] [--final-passes none,full:5,audio:5] [--files sample,jfk,dev00,...]
"""

import argparse
import asyncio
import math
from pathlib import Path

import numpy as np

from deployments.config import LiveConfig, WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.live.events import SessionSettings
from deployments.transcriber.engines import load_engine
from deployments.transcriber.engines.base import WhisperEngine
from deployments.types import SAMPLE_RATE, ChunkOptions, ComputeSeconds
from devkit.live_offline import Reading, Streamed, file_compute, stream
from devkit.media import SHARED_AUDIO, pyannote_sample
from devkit.percentiles import percentile
from devkit.wer import word_error_rate, word_errors

FRAME = SAMPLE_RATE // 10


def recordings() -> list[Path]:
    found = [pyannote_sample()]
    names = ["jfk.flac", "dev00.wav", "dev01.wav"] + [f"trn0{n}.wav" for n in range(1, 10)]
    return found + [SHARED_AUDIO / name for name in names if (SHARED_AUDIO / name).exists()]


def file_words(engine: WhisperEngine, samples: np.ndarray) -> str:
    """The words of the recording read as a file (every recording here is at most 30 s: one chunk)."""
    (transcript,) = engine.transcribe_batch([samples], ChunkOptions(language="en"))
    return " ".join(segment.text for segment in transcript.segments)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:tiny.en")
    parser.add_argument("--windows", default="full,audio")
    parser.add_argument("--contexts", default="0,2")
    parser.add_argument("--final-passes", default="none,full:5", help="full:N, audio:N: N s of context")
    parser.add_argument("--files", default="", help="names without extension; default: all found")
    parser.add_argument("--slowdown", type=float, default=1.0, help="readings answered this many times later")
    parser.add_argument("--delay-ms", type=int, default=480, help="the session's delay_ms")
    parser.add_argument("--turns", default="none", help="turn detection: none, or vad (OpenAI's server VAD, 500 ms)")
    parser.add_argument("--whisper", action="append", default=[], metavar="KEY=VALUE", help="a whisper setting")
    parser.add_argument("--live", action="append", default=[], metavar="KEY=VALUE", help="a live setting; repeatable")
    args = parser.parse_args()
    files = [path for path in recordings() if not args.files or path.stem in args.files.split(",")]
    print(f"{len(files)} recordings: {', '.join(path.stem for path in files)}")
    for model in args.models.split(","):
        whisper = dict(item.split("=", 1) for item in args.whisper)
        engine = load_engine(WhisperModelConfig.model_validate({"model": model, "cpu_threads": 2, **whisper}))
        audio = {path.stem: decode_audio(path).samples for path in files}
        filed = {name: file_words(engine, samples) for name, samples in audio.items()}
        names = [name for name in audio if filed[name].strip()]  # a file with no words has no rate to compare
        file_cost = sum((file_compute(engine, audio[name]) for name in names), ComputeSeconds())
        audio_s = sum(len(audio[name]) for name in names) / SAMPLE_RATE
        print(f"\n{model}: file words {sum(len(filed[n].split()) for n in names)} in {len(names)} recordings")
        print("window  context(s)    final pass  WER streamed  WER final  dropped  wrong  extra  wait p50(s)"
              "  wait p95(s)  2nd read  2nd p50(s)  2nd max(s)  compute(s)  final per file")  # fmt: skip
        compute_rows: list[tuple[LiveConfig, dict[str, Streamed]]] = []
        for window in args.windows.split(","):
            for context in [float(c) for c in args.contexts.split(",")]:
                for final in args.final_passes.split(","):
                    final_pass, _, final_context = final.partition(":")  # "full:5": 5 s of context before it
                    config = LiveConfig(
                        encoder_window=window,
                        context_s=context,
                        final_pass=final_pass,
                        final_context_s=float(final_context or 0),
                        **dict(item.split("=", 1) for item in args.live),
                    )
                    turns = {"turn_detection": "vad", "silence_ms": 500} if args.turns == "vad" else {}
                    settings = SessionSettings(language="en", delay_ms=args.delay_ms, **turns)
                    slowdown = args.slowdown
                    runs = {n: asyncio.run(stream(engine, audio[n], config, settings, slowdown)) for n in names}
                    print_row(config, filed, runs)
                    compute_rows.append((config, runs))
        print_compute(file_cost, audio_s, compute_rows)


def print_row(config: LiveConfig, filed: dict[str, str], runs: dict[str, Streamed]) -> None:
    names = list(runs)
    streamed = word_errors([filed[n] for n in names], [runs[n].streamed for n in names])
    final = word_errors([filed[n] for n in names], [runs[n].final for n in names])
    per_file = " ".join(f"{n}:{word_error_rate(filed[n], runs[n].final):.2f}" for n in names)
    waits = [wait for run in runs.values() for wait in run.waits]
    read_again = sum(len(run.second_s) for run in runs.values())
    second = [took for run in runs.values() for took in run.second_s] or [math.nan]
    compute_s = sum(run.compute_s for run in runs.values())
    p50, p95 = percentile(waits, 0.5), percentile(waits, 0.95)
    final_pass = f"{config.final_pass}:{config.final_context_s:g}" if config.final_pass != "none" else "none"
    print(f"{config.encoder_window:>6}  {config.context_s:10.1f}  {final_pass:>12}  {streamed.rate:12.1%}"
          f"  {final.rate:9.1%}  {final.deleted:7d}  {final.substituted:5d}  {final.inserted:5d}  {p50:11.2f}"
          f"  {p95:11.2f}  {read_again:8d}  {percentile(second, 0.5):10.2f}  {max(second):10.2f}  {compute_s:10.1f}"
          f"  {per_file}",
          flush=True)  # fmt: skip


def print_compute(
    file_cost: ComputeSeconds, audio_s: float, rows: list[tuple[LiveConfig, dict[str, Streamed]]]
) -> None:
    """Engine seconds per second of audio by stage, live (streaming, second readings) against the file's."""

    def per_s(spent: ComputeSeconds) -> str:
        return (
            f"{spent.encoder / audio_s:8.3f}  {spent.decoder / audio_s:8.3f}  {spent.alignment / audio_s:8.3f}"
            f"  {spent.total / audio_s:8.3f}"
        )

    print(f"\nengine seconds per second of audio ({audio_s:.0f} s): encoder, decoder, alignment, all stages")
    print(f"{'the file (VAD chunks, json)':<44}  {per_s(file_cost)}")
    for config, runs in rows:
        streaming = sum((run.streaming for run in runs.values()), ComputeSeconds())
        second = sum((run.second for run in runs.values()), ComputeSeconds())
        label = _label(config)
        print(f"{label + ': streaming':<44}  {per_s(streaming)}")
        print(f"{label + ': second readings':<44}  {per_s(second)}")
        ratio = (streaming + second).total / file_cost.total
        print(f"{label + ': live compute / file compute':<44}  {ratio:8.2f}x")
    for config, runs in rows:
        print_readings(_label(config), [reading for run in runs.values() for reading in run.readings], audio_s)


def _label(config: LiveConfig) -> str:
    """A configuration as the compute tables name it: window, context, final pass and its context."""
    return f"{config.encoder_window} {config.context_s:g} {config.final_pass}:{config.final_context_s:g}"


BUFFER_BINS = ((0, 2), (2, 3), (3, 4), (4, 6), (6, 30))
"""Buffer lengths (s) the streaming readings are counted by."""


def print_readings(label: str, readings: list[Reading], audio_s: float) -> None:
    """How many streaming readings, of how much audio, and what one costs by the buffer it read (ms)."""
    if not readings:
        return
    mean_s = sum(reading.audio_s for reading in readings) / len(readings)
    print(f"\n{label}: {len(readings)} streaming readings, {len(readings) / audio_s:.2f} per second of audio,"
          f" buffer {mean_s:.2f} s on average")  # fmt: skip
    print("buffer(s)  readings  words  encoder(ms)  decoder(ms)  alignment(ms)  all(ms)")
    for low, high in BUFFER_BINS:
        within = [reading for reading in readings if low <= reading.audio_s < high]
        if not within:
            continue
        spent = sum((reading.compute for reading in within), ComputeSeconds()).share(len(within))
        words = sum(reading.words for reading in within) / len(within)
        print(f"{f'{low}-{high}':>9}  {len(within):8d}  {words:5.1f}  {spent.encoder * 1000:11.0f}"
              f"  {spent.decoder * 1000:11.0f}  {spent.alignment * 1000:13.0f}  {spent.total * 1000:7.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
