"""Short synchronous requests in the short encoder window: is a file of a few seconds faster to transcribe when
Whisper's encoder reads only its length (`encoder_window: audio`) instead of 30 s, and are its words the same?

The engine alone (CTranslate2, 2 threads), as the pipeline reads a short file: one VAD chunk, plain text
(`json`) and timed words (`verbose_json` with word timestamps). Each clip is read in both windows, alternating,
`--repeats` times; the table gives the median seconds of each, their ratio (the full window, today's path for
files, is the baseline), the WER against the reference where there is one (`jfk.flac`), and how far the short
window's words are from the full window's (WER of one against the other).

    .venv/bin/python -m scripts.bench_short_window [--models embedded:tiny.en,embedded:base] [--repeats 5]
"""

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from deployments.config import WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions
from devkit.media import JFK_REFERENCE, SHARED_AUDIO, pyannote_sample
from devkit.wer import word_error_rate


@dataclass
class Clip:
    name: str
    samples: np.ndarray
    reference: str | None = None


def clips() -> list[Clip]:
    call = decode_audio(pyannote_sample()).samples
    found = [
        Clip("call 6-11 s (5 s)", call[6 * SAMPLE_RATE : 11 * SAMPLE_RATE]),
        Clip("call 6-17 s (11 s)", call[6 * SAMPLE_RATE : 17 * SAMPLE_RATE]),
        Clip("call 6-26 s (20 s)", call[6 * SAMPLE_RATE : 26 * SAMPLE_RATE]),
    ]
    if (SHARED_AUDIO / "jfk.flac").exists():
        found.insert(0, Clip("jfk.flac (11 s)", decode_audio(SHARED_AUDIO / "jfk.flac").samples, JFK_REFERENCE))
    return found


OUTPUTS = {
    "json": ChunkOptions(language="en"),
    "verbose_json, words": ChunkOptions(language="en", word_timestamps=True),
}


def text_of(engine: CTranslate2Engine, clip: Clip, options: ChunkOptions) -> tuple[str, float]:
    started = time.perf_counter()
    (transcript,) = engine.transcribe_batch([clip.samples], options)
    return "".join(segment.text for segment in transcript.segments), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:tiny.en,embedded:base")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| model | clip | output | full window | audio window | audio / full | WER full | WER audio | words apart |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        engine = CTranslate2Engine(WhisperModelConfig(model=model, cpu_threads=2))
        for clip in clips():
            for output, options in OUTPUTS.items():
                short_options = options.model_copy(update={"encoder_window": "audio"})
                text_of(engine, clip, options)  # warm-up
                full_s, audio_s = [], []
                for _ in range(args.repeats):  # alternating, so that a noisy moment hurts both alike
                    full_text, seconds = text_of(engine, clip, options)
                    full_s.append(seconds)
                    audio_text, seconds = text_of(engine, clip, short_options)
                    audio_s.append(seconds)
                full, audio = statistics.median(full_s), statistics.median(audio_s)
                wer_full = f"{word_error_rate(clip.reference, full_text):.1%}" if clip.reference else "-"
                wer_audio = f"{word_error_rate(clip.reference, audio_text):.1%}" if clip.reference else "-"
                apart = word_error_rate(full_text, audio_text) if full_text.strip() else 0.0
                print(
                    f"| {model.removeprefix('embedded:')} | {clip.name} | {output} | {full:.3f} s | {audio:.3f} s"
                    f" | {audio / full:.2f} | {wer_full} | {wer_audio} | {apart:.1%} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
