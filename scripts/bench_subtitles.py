"""How well srt/vtt cues follow the subtitle rules, before (a cue per Whisper segment) and after (cues cut from
the words by `serve_app/rendering/subtitles/`), over the call and, with `../shared`, its longer recordings. No
service: the embedded engine transcribes in this process, each file in 30 s chunks put back on its timeline.

For each file and in total it prints the share of cues within each rule of the defaults: line width, line count,
duration at most max_cue_duration_s, at least 5/6 s where the next cue leaves room, reading speed.

    .venv/bin/python -m scripts.bench_subtitles [--model embedded:tiny.en] [--files sample,dev00,dev01,trn01,...]
"""

import argparse
from dataclasses import dataclass
from pathlib import Path

from deployments.config import WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines import load_engine
from deployments.transcriber.engines.base import WhisperEngine
from deployments.types import SAMPLE_RATE, ChunkOptions, Segment, Word
from devkit.media import SHARED_AUDIO, pyannote_sample
from serve_app.rendering.subtitles import MIN_CUE_DURATION_S, SubtitleRules, build_cues, cue_words

CHUNK = 30 * SAMPLE_RATE
RULE_NAMES = ("line width", "line count", "duration <= max", "duration >= 5/6 s", "chars/s")


@dataclass
class Shown:
    """A cue as a viewer sees it."""

    start: float
    end: float
    text: str


def recordings(names: list[str]) -> list[Path]:
    shared = [SHARED_AUDIO / f"{name}.wav" for name in names if name != "sample"]
    return ([pyannote_sample()] if "sample" in names else []) + [path for path in shared if path.exists()]


def transcribe(engine: WhisperEngine, path: Path) -> tuple[list[Segment], list[Word]]:
    samples = decode_audio(path).samples
    segments: list[Segment] = []
    words: list[Word] = []
    for offset in range(0, len(samples), CHUNK):
        at = offset / SAMPLE_RATE
        options = ChunkOptions(language="en", word_timestamps=True)
        (chunk,) = engine.transcribe_batch([samples[offset : offset + CHUNK]], options)
        segments += [s.model_copy(update={"start": s.start + at, "end": s.end + at}) for s in chunk.segments]
        words += [w.model_copy(update={"start": w.start + at, "end": w.end + at}) for w in chunk.words]
    return segments, words


def within(cues: list[Shown], rules: SubtitleRules) -> list[list[bool]]:
    """Per rule, whether each cue keeps it."""
    checks: list[list[bool]] = [[] for _ in RULE_NAMES]
    for index, cue in enumerate(cues):
        lines = cue.text.split("\n")
        duration = cue.end - cue.start
        room = cues[index + 1].start - cue.start if index + 1 < len(cues) else float("inf")
        characters = len(" ".join(lines))
        checks[0].append(all(len(line) <= rules.max_line_width for line in lines))
        checks[1].append(len(lines) <= rules.max_line_count)
        checks[2].append(duration <= rules.max_cue_duration_s + 1e-6)
        checks[3].append(duration >= MIN_CUE_DURATION_S - 1e-6 or room < MIN_CUE_DURATION_S)
        checks[4].append(duration > 0 and characters / duration <= rules.max_chars_per_second + 1e-6)
    return checks


def report(name: str, before: list[list[bool]], after: list[list[bool]]) -> None:
    print(f"{name}: {len(before[0])} cues before, {len(after[0])} after")
    for rule, old, new in zip(RULE_NAMES, before, after, strict=True):
        share = lambda kept: 100 * sum(kept) / max(len(kept), 1)  # noqa: E731
        print(f"  {rule:<18} {share(old):6.1f}% -> {share(new):6.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="embedded:tiny.en")
    parser.add_argument("--files", default="sample,dev00,dev01," + ",".join(f"trn0{n}" for n in range(1, 10)))
    args = parser.parse_args()
    rules = SubtitleRules()
    engine = load_engine(WhisperModelConfig(model=args.model, cpu_threads=2))
    totals: tuple[list[list[bool]], list[list[bool]]] = ([[] for _ in RULE_NAMES], [[] for _ in RULE_NAMES])
    for path in recordings(args.files.split(",")):
        segments, words = transcribe(engine, path)
        old = [Shown(s.start, s.end, s.text.strip()) for s in segments if s.text.strip()]
        new = [Shown(c.start, c.end, c.text) for c in build_cues(cue_words(words), rules)]
        before, after = within(old, rules), within(new, rules)
        report(path.name, before, after)
        for total, checks in zip(totals, (before, after), strict=True):
            for kept, more in zip(total, checks, strict=True):
                kept += more
    report("all files", *totals)


if __name__ == "__main__":
    main()
