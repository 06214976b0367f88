"""How well live sessions' speaker labels (`deployments/live/_speakers.py`) follow the reference speakers, for
a range of similarity thresholds: the evidence behind `live.speaker_threshold`.

For each file with a reference RTTM, Whisper (tiny.en) times the words, each word's voice is embedded by
CAM++ from the 1.5 s around its middle (as a live session does), and `OnlineSpeakers` labels them in
order. Printed per file and threshold: the speakers found against the reference count, and the share of
words (outside overlapped speech) whose label is the reference speaker under the best one-to-one mapping.
No service: the models run in this process.

    .venv/bin/python -m scripts.sweep_live_speakers [--thresholds 0.35,0.4,0.45,0.5]
"""

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from deployments.config import DiarizationConfig, WhisperModelConfig
from deployments.diarization._pyannote import DiarizationPipeline
from deployments.files.decoding import decode_audio
from deployments.live._speakers import SPEAKER_WINDOW_S, OnlineSpeakers
from deployments.transcriber.engines import load_engine
from deployments.types import SAMPLE_RATE, ChunkOptions
from devkit.media import SHARED_AUDIO, pyannote_sample


def reference_turns(rttm: Path, name: str) -> list[tuple[float, float, str]]:
    rows = [line.split() for line in rttm.read_text().splitlines() if line.startswith("SPEAKER")]
    return [(float(r[3]), float(r[3]) + float(r[4]), r[7]) for r in rows if r[1] == name]


def files() -> list[tuple[str, Path, list[tuple[float, float, str]]]]:
    call = pyannote_sample()
    found = [("pyannote call", call, reference_turns(call.with_suffix(".rttm"), "sample"))]
    ami = SHARED_AUDIO / "ami_dev.rttm"
    for name in ("dev00", "dev01"):
        if ami.exists() and (SHARED_AUDIO / f"{name}.wav").exists():
            found.append((f"AMI {name}", SHARED_AUDIO / f"{name}.wav", reference_turns(ami, name)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", default="0.35,0.4,0.45,0.5")
    args = parser.parse_args()
    engine = load_engine(WhisperModelConfig(model="embedded:tiny.en", cpu_threads=2))
    encoder = DiarizationPipeline(DiarizationConfig())
    half = int(SPEAKER_WINDOW_S * SAMPLE_RATE / 2)
    print("file            threshold  speakers (reference)  words labelled right")
    for name, path, turns in files():
        samples = decode_audio(path).samples
        words: list[tuple[float, float]] = []
        for offset in range(0, len(samples), 30 * SAMPLE_RATE):
            options = ChunkOptions(language="en", word_timestamps=True, segment_timestamps=False)
            (transcript,) = engine.transcribe_batch([samples[offset : offset + 30 * SAMPLE_RATE]], options)
            words += [(w.start + offset / SAMPLE_RATE, w.end + offset / SAMPLE_RATE) for w in transcript.words]
        windows = [samples[max(0, m - half) : m + half] for m in (int((s + e) / 2 * SAMPLE_RATE) for s, e in words)]
        words = [word for word, window in zip(words, windows, strict=True) if len(window) >= SAMPLE_RATE // 2]
        voices = encoder.embed_voices([window for window in windows if len(window) >= SAMPLE_RATE // 2])
        truth = []
        for start, end in words:
            covering = {speaker for s, e, speaker in turns if s <= (start + end) / 2 <= e}
            truth.append(covering.pop() if len(covering) == 1 else None)
        for threshold in [float(t) for t in args.thresholds.split(",")]:
            speakers = OnlineSpeakers(threshold)
            labels = [speakers.assign(voice) for voice in voices]
            pairs = [(label, ref) for label, ref in zip(labels, truth, strict=True) if ref is not None]
            ours, theirs = sorted({p[0] for p in pairs}), sorted({p[1] for p in pairs})
            counts = np.zeros((len(ours), len(theirs)))
            for label, ref in pairs:
                counts[ours.index(label), theirs.index(ref)] += 1
            rows, cols = linear_sum_assignment(-counts)
            right = counts[rows, cols].sum() / len(pairs)
            found, expected = len(speakers.sums), len({t[2] for t in turns})
            print(f"{name:<15} {threshold:9.2f}  {found:>8} ({expected})          {right:6.1%} of {len(pairs)}")


if __name__ == "__main__":
    main()
