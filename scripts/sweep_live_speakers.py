"""How well live sessions' speaker labels (`deployments/live/_speakers.py`) follow the reference speakers, for
a range of similarity thresholds: the evidence behind `live.speaker_threshold`.

For each file with a reference RTTM, Whisper (tiny.en) times the words, and a session's `WordSpeakers` labels
them in order, each once the 1.5 s around its middle has arrived (as `OnlineSpeakers` with CAM++ embeddings:
doubtful words, words closer than `SAME_SOUND_S` sharing one). Printed per file and threshold: the speakers
found against the reference count, and the share of words (outside overlapped speech) whose label is the
reference speaker under the best one-to-one mapping.
No service: the models run in this process.

    .venv/bin/python -m scripts.sweep_live_speakers [--thresholds 0.35,0.4,0.45,0.5]
"""

import argparse
import asyncio
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from deployments.config import DiarizationConfig, WhisperModelConfig
from deployments.diarization._pyannote import DiarizationPipeline
from deployments.files.decoding import decode_audio
from deployments.live._buffer import RecentAudio
from deployments.live._local_agreement import TimedWord
from deployments.live._speakers import SPEAKER_WINDOW_S, WordSpeakers
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


async def label(
    samples: np.ndarray, words: list[tuple[float, float]], threshold: float, encoder: DiarizationPipeline
) -> tuple[list[int | None], int]:
    """Each word's label as a session gives it, and the speakers found."""

    async def embed(windows: list[np.ndarray]) -> np.ndarray:
        return encoder.embed_voices(windows)

    recent = RecentAudio()
    speakers = WordSpeakers(threshold, embed, recent)
    labels: list[int | None] = []
    heard = 0
    for start, end in words:
        until = min(len(samples), int(((start + end) / 2 + SPEAKER_WINDOW_S / 2) * SAMPLE_RATE))
        if until > heard:
            recent.add(samples[heard:until])
            heard = until
        labels += await speakers.label([TimedWord(" word", start, end)])
    return labels, len(speakers.speakers.sums)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", default="0.35,0.4,0.45,0.5")
    args = parser.parse_args()
    engine = load_engine(WhisperModelConfig(model="embedded:tiny.en", cpu_threads=2))
    encoder = DiarizationPipeline(DiarizationConfig())
    print("file            threshold  speakers (reference)  words labelled right")
    for name, path, turns in files():
        samples = decode_audio(path).samples
        words: list[tuple[float, float]] = []
        for offset in range(0, len(samples), 30 * SAMPLE_RATE):
            options = ChunkOptions(language="en", word_timestamps=True, segment_timestamps=False)
            (transcript,) = engine.transcribe_batch([samples[offset : offset + 30 * SAMPLE_RATE]], options)
            words += [(w.start + offset / SAMPLE_RATE, w.end + offset / SAMPLE_RATE) for w in transcript.words]
        truth = []
        for start, end in words:
            covering = {speaker for s, e, speaker in turns if s <= (start + end) / 2 <= e}
            truth.append(covering.pop() if len(covering) == 1 else None)
        for threshold in [float(t) for t in args.thresholds.split(",")]:
            labels, found = asyncio.run(label(samples, words, threshold, encoder))
            pairs = [(lab, ref) for lab, ref in zip(labels, truth, strict=True) if ref is not None and lab is not None]
            ours, theirs = sorted({p[0] for p in pairs}), sorted({p[1] for p in pairs})
            counts = np.zeros((len(ours), len(theirs)))
            for lab, ref in pairs:
                counts[ours.index(lab), theirs.index(ref)] += 1
            rows, cols = linear_sum_assignment(-counts)
            right = counts[rows, cols].sum() / len(pairs)
            expected = len({t[2] for t in turns})
            print(f"{name:<15} {threshold:9.2f}  {found:>8} ({expected})          {right:6.1%} of {len(pairs)}")


if __name__ == "__main__":
    main()
