"""Speech whose language changes (issue 37): WER of each language's part with one language per file (before)
and with each chunk in its own language (`chunking.language_per_chunk`, after), and what the setting costs on
a file in one language.

In-process, no Ray: the pipeline's chunking and assembly with the Whisper base engine (devkit/code_switching.py).
- The code-switched recording: English, a 1 s pause, German, spoken by espeak-ng. Prints each part's WER
  (jiwer, normalised) with the setting off and on, and the segments' languages.
- The monolingual file: the development audio's English excerpts (../shared/audio) repeated to --minutes (jfk
  repeated where that folder is absent). Prints for each of --runs rounds the time with the setting off and on
  and their ratio, and the first pass's language detections: how many chunks came out in another language, and
  how sure (the rule behind `chunking.language_min_probability`).

    .venv/bin/python -m scripts.bench_code_switching [--minutes 10] [--runs 2] [--cpu-threads 2]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deployments.files.decoding import decode_windows
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, BatchHints, ChunkOptions, ChunkTranscript
from devkit.code_switching import ENGLISH, GERMAN, EngineTranscriber, base_engine, code_switched, text_between
from devkit.code_switching import transcribe as pipeline_transcribe
from devkit.media import SHARED_AUDIO, encode
from devkit.wer import word_error_rate

ENGLISH_EXCERPTS = ["dev00.wav", "dev01.wav", "sample.wav", *(f"trn0{i}.wav" for i in range(1, 10))]


class _Detections(EngineTranscriber):
    """Keeps the language and its probability of every chunk decoded without a given language."""

    def __init__(self, engine: CTranslate2Engine) -> None:
        super().__init__(engine)
        self.found: list[tuple[str, float | None]] = []

    async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        transcript = await super()._transcribe(chunk, options, hints)
        if options.language is None:
            self.found.append((transcript.language, transcript.language_probability))
        return transcript


def _monolingual(folder: Path, minutes: float) -> Path:
    sources = [SHARED_AUDIO / name for name in ENGLISH_EXCERPTS if (SHARED_AUDIO / name).exists()]
    if not sources:
        sources = [SHARED_AUDIO / "jfk.flac"] if (SHARED_AUDIO / "jfk.flac").exists() else []
    if not sources:
        raise SystemExit(f"no English speech in {SHARED_AUDIO}")
    pieces = [np.concatenate(list(decode_windows(str(source)))) for source in sources]
    samples, total, index = [], 0, 0
    while total < minutes * 60 * SAMPLE_RATE:
        samples.append(pieces[index % len(pieces)])
        total += len(samples[-1])
        index += 1
    path = folder / "monolingual.wav"
    path.write_bytes(encode(np.concatenate(samples), "wav"))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--cpu-threads", type=int, default=2)
    args = parser.parse_args()
    engine = base_engine(args.cpu_threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path, switch = code_switched(folder)
        print(f"code-switched recording: English 0-{switch:.1f} s (incl. the pause), then German")
        for per_chunk in (False, True):
            transcript = pipeline_transcribe(engine, path, per_chunk)
            english, german = text_between(transcript, 0, switch), text_between(transcript, switch, 1e9)
            languages = "".join(f" {s.language}" for s in transcript.segments)
            print(
                f"  language_per_chunk={str(per_chunk).lower():5}  WER English {word_error_rate(ENGLISH, english):.3f}"
                f"  German {word_error_rate(GERMAN, german):.3f}  language {transcript.language}  segments:{languages}"
            )
            print(f"    German part: {german}")

        mono = _monolingual(folder, args.minutes)
        seconds = len(np.concatenate(list(decode_windows(str(mono))))) / SAMPLE_RATE
        print(f"monolingual English file: {seconds / 60:.1f} min")
        for run in range(1, args.runs + 1):
            times, texts = {}, {}
            for per_chunk in (False, True):
                started = time.perf_counter()
                texts[per_chunk] = pipeline_transcribe(detections := _Detections(engine), mono, per_chunk).text
                times[per_chunk] = time.perf_counter() - started
            other = [(code, p) for code, p in detections.found if code != "en"]
            print(
                f"  run {run}: off {times[False]:.1f} s  on {times[True]:.1f} s  ratio on/off"
                f" {times[True] / times[False]:.3f}  same text: {texts[False] == texts[True]}"
                f"  chunks {len(detections.found)}, detected other than en: {_detections(other)}"
            )


def _detections(found: list[tuple[str, float | None]]) -> str:
    return ", ".join(f"{code} {p:.2f}" if p is not None else code for code, p in found) or "none"


if __name__ == "__main__":
    main()
