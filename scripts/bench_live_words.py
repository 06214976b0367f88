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
transcript waits for after its end, beside the last streamed words' reading) and of all readings.

    .venv/bin/python -m scripts.bench_live_words [--models embedded:tiny.en] [--windows full,audio]
        [--contexts 0,2] [--final-passes none,full:5,audio:5] [--files sample,jfk,dev00,...]
"""

import argparse
import asyncio
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deployments.config import LiveConfig, WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.live._channel import ChannelTranscriber
from deployments.live._models import Emitted, LiveModels
from deployments.live.events import SessionSettings, TranscriptEvent
from deployments.transcriber.engines import load_engine
from deployments.transcriber.engines.base import WhisperEngine
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript
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


@dataclass
class Streamed:
    streamed: str = ""
    final: str = ""
    waits: list[float] = field(default_factory=list)
    """How much audio each streamed word waited for (s)."""
    second_s: list[float] = field(default_factory=list)
    """Compute time of each utterance's second reading (s)."""
    compute_s: float = 0.0


async def stream(engine: WhisperEngine, samples: np.ndarray, config: LiveConfig) -> Streamed:
    """The session's streamed and final texts, the waits and the readings' compute time."""
    run = Streamed()
    heard = 0  # samples fed when the current events were made
    streamed: list[str] = []

    async def transcribe(chunk: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        started = time.perf_counter()
        (transcript,) = engine.transcribe_batch([chunk], options)
        took = time.perf_counter() - started
        run.compute_s += took
        if options.beam_size is None:  # a second reading: streaming reads greedily
            run.second_s.append(took)
        return transcript

    async def no_voices(windows: list[np.ndarray]) -> np.ndarray:
        return np.zeros((len(windows), 1))

    async def no_turns(audio: np.ndarray) -> float:
        return 0.0

    pending: list[Emitted] = []  # events on their way: the end of input's last words come from its reading

    def emit(event: Emitted) -> None:
        if isinstance(event, TranscriptEvent):
            streamed.append(event.text)
            run.waits.extend(heard / SAMPLE_RATE - word.end / 1000 for word in event.words)
        elif isinstance(event, asyncio.Task):
            pending.append(event)

    models = LiveModels(transcribe, no_voices, no_turns)
    channel = ChannelTranscriber(SessionSettings(language="en"), config, models, emit, None)
    for offset in range(0, len(samples), FRAME):
        heard = min(len(samples), offset + FRAME)
        await channel.feed(samples[offset : offset + FRAME])
        await asyncio.sleep(0)  # the second readings started run now (their Whisper calls never suspend)
    await channel.finish()
    for task in pending:
        ready = await task if isinstance(task, asyncio.Task) else task
        for event in ready if isinstance(ready, list) else [ready]:
            emit(event)
    run.streamed, run.final = "".join(streamed).strip(), channel.text
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:tiny.en")
    parser.add_argument("--windows", default="full,audio")
    parser.add_argument("--contexts", default="0,2")
    parser.add_argument("--final-passes", default="none,full:5", help="full:N, audio:N: N s of context")
    parser.add_argument("--files", default="", help="names without extension; default: all found")
    args = parser.parse_args()
    files = [path for path in recordings() if not args.files or path.stem in args.files.split(",")]
    print(f"{len(files)} recordings: {', '.join(path.stem for path in files)}")
    for model in args.models.split(","):
        engine = load_engine(WhisperModelConfig(model=model, cpu_threads=2))
        audio = {path.stem: decode_audio(path).samples for path in files}
        filed = {name: file_words(engine, samples) for name, samples in audio.items()}
        names = [name for name in audio if filed[name].strip()]  # a file with no words has no rate to compare
        print(f"\n{model}: file words {sum(len(filed[n].split()) for n in names)} in {len(names)} recordings")
        print("window  context(s)    final pass  WER streamed  WER final  dropped  wrong  extra  wait p50(s)"
              "  wait p95(s)  2nd read  2nd p50(s)  2nd max(s)  compute(s)  final per file")  # fmt: skip
        for window in args.windows.split(","):
            for context in [float(c) for c in args.contexts.split(",")]:
                for final in args.final_passes.split(","):
                    final_pass, _, final_context = final.partition(":")  # "full:5": 5 s of context before it
                    config = LiveConfig(
                        encoder_window=window,
                        context_s=context,
                        final_pass=final_pass,
                        final_context_s=float(final_context or 0),
                    )
                    runs = {name: asyncio.run(stream(engine, audio[name], config)) for name in names}
                    print_row(config, filed, runs)


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


if __name__ == "__main__":
    main()
