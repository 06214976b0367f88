"""The evidence for `DiarizationConfig.known_speaker_threshold`: cosine similarities of reference clips to the
centroids of diarized speakers, same speaker against different speakers.

References are cut from stretches where only one speaker talks (per the RTTM); each is compared with the
centroids the Diarizer's own turns give (`_known_speakers.speaker_centroids`, exactly as the service does),
computed on audio other than the reference's: for the AMI excerpts (the same two speakers, MEE009 and MEE012,
in both) the references come from the other excerpt; for sample.wav the reference's stretch is cut out of the
audio before it is diarized. A diarized speaker is the reference speaker whose truth turns it overlaps most.

    .venv/bin/python -m scripts.measure_known_speakers [--lengths 2 3 5]

Measured (CPU, the embedded pipeline's defaults): the same speaker scored 0.71-0.88 against a clean cluster, and
0.49-0.58 against the one cluster the diarizer made of both AMI speakers in dev01 (named after the speaker who
holds most of it); different speakers scored -0.11 to 0.47 (mean 0.16; the highest, 0.47, a 5 s clip of one
sample.wav speaker cut out of that 30 s call). Hence `known_speaker_threshold` 0.55: 0.08 above the highest
different-speaker score, 0.16 below the lowest same-speaker score against a clean cluster.
"""

import argparse
from pathlib import Path

import av
import numpy as np
import torch
from pyannote.core import Annotation, Segment
from pyannote.database.util import load_rttm

from deployments.config import DiarizationConfig
from deployments.diarization._known_speakers import speaker_centroids
from deployments.diarization._pyannote import DiarizationPipeline
from deployments.types import SAMPLE_RATE, DiarizationOptions, SpeakerTurn

AUDIO = Path(__file__).resolve().parents[2] / "shared" / "audio"


def decode(path: Path) -> np.ndarray:
    resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
    with av.open(str(path)) as container:
        frames = [f.to_ndarray()[0] for frame in container.decode(audio=0) for f in resampler.resample(frame)]
    return np.concatenate(frames).astype(np.float32)


def solo_stretches(annotation: Annotation, min_s: float) -> list[tuple[str, float, float]]:
    """(speaker, start, end) where only that speaker talks, at least `min_s` long."""
    stretches = []
    for segment, _, label in annotation.itertracks(yield_label=True):
        cuts = [segment]
        for other in annotation.subset([label], invert=True).get_timeline().support():
            cuts = [part for cut in cuts for part in _minus(cut, other)]
        stretches += [(label, cut.start, cut.end) for cut in cuts if cut.duration >= min_s]
    return stretches


def _minus(segment: Segment, other: Segment) -> list[Segment]:
    if other.end <= segment.start or other.start >= segment.end:
        return [segment]
    parts = []
    if other.start > segment.start:
        parts.append(segment.__class__(segment.start, other.start))
    if other.end < segment.end:
        parts.append(segment.__class__(other.end, segment.end))
    return parts


def truth_of(turns: list[SpeakerTurn], annotation: Annotation) -> dict[str, str]:
    """Diarizer label -> the truth speaker it overlaps most."""
    overlap: dict[tuple[str, str], float] = {}
    for turn in turns:
        for segment, _, label in annotation.itertracks(yield_label=True):
            shared = min(turn.end, segment.end) - max(turn.start, segment.start)
            if shared > 0:
                overlap[(turn.speaker, label)] = overlap.get((turn.speaker, label), 0.0) + shared
    best: dict[str, tuple[float, str]] = {}
    for (speaker, label), seconds in overlap.items():
        if seconds > best.get(speaker, (0.0, ""))[0]:
            best[speaker] = (seconds, label)
    return {speaker: label for speaker, (_, label) in best.items()}


def shifted(turn: SpeakerTurn, cut_at: float, cut_s: float) -> SpeakerTurn:
    """A turn of the audio with [cut_at, cut_at + cut_s) cut out, back on the original timeline."""

    def at(time: float) -> float:
        return time if time < cut_at else time + cut_s

    return turn.model_copy(update={"start": at(turn.start), "end": at(turn.end)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=float, nargs="+", default=[2.0, 3.0, 5.0])
    args = parser.parse_args()
    pipeline = DiarizationPipeline(DiarizationConfig())
    encoder = pipeline.embedding
    assert encoder is not None

    def embed(samples: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return encoder.embed(encoder.frames(torch.from_numpy(np.ascontiguousarray(samples)))).numpy()

    rttm = {**load_rttm(str(AUDIO / "sample.rttm")), **load_rttm(str(AUDIO / "ami_dev.rttm"))}
    audio = {name: decode(AUDIO / f"{name}.wav") for name in ("sample", "dev00", "dev01")}
    options = DiarizationOptions()
    same: list[float] = []
    different: list[float] = []

    def centroids_of(samples: np.ndarray, annotation: Annotation) -> tuple[dict, dict]:
        diarization = pipeline.diarize(samples, options)
        centroids = speaker_centroids(samples, diarization.exclusive_turns, embed)
        return centroids, truth_of(diarization.exclusive_turns, annotation)

    scored: dict[str, tuple[dict, dict]] = {}
    for name in ("dev00", "dev01"):
        scored[name] = centroids_of(audio[name], rttm[name])
    for length in args.lengths:
        for ref_file, scored_file in (("dev00", "dev01"), ("dev01", "dev00"), ("sample", "dev00"), ("sample", "dev01")):
            centroids, truth = scored[scored_file]
            for speaker, start, _ in solo_stretches(rttm[ref_file], length):
                clip = audio[ref_file][int(start * SAMPLE_RATE) : int((start + length) * SAMPLE_RATE)]
                reference = embed(clip)
                for label, centroid in centroids.items():
                    score = float(centroid @ reference)
                    (same if truth.get(label) == speaker else different).append(score)
                    print(
                        f"{length:.0f}s ref {ref_file}:{speaker}@{start:.1f} vs {scored_file}:{truth.get(label)}"
                        f" {score:.3f}"
                    )
        # sample.wav: the reference's stretch cut out of the audio that is diarized
        for speaker, start, _ in solo_stretches(rttm["sample"], length):
            samples = audio["sample"]
            cut_from, cut_to = int(start * SAMPLE_RATE), int((start + length) * SAMPLE_RATE)
            clip = samples[cut_from:cut_to]
            rest = np.concatenate([samples[:cut_from], samples[cut_to:]])
            diarization = pipeline.diarize(rest, options)
            centroids = speaker_centroids(rest, diarization.exclusive_turns, embed)

            truth = truth_of([shifted(turn, start, length) for turn in diarization.exclusive_turns], rttm["sample"])
            reference = embed(clip)
            for label, centroid in centroids.items():
                score = float(centroid @ reference)
                (same if truth.get(label) == speaker else different).append(score)
                print(f"{length:.0f}s ref sample:{speaker}@{start:.1f} vs sample-rest:{truth.get(label)} {score:.3f}")
    print(f"same speaker:      n={len(same)} min={min(same):.3f} mean={np.mean(same):.3f} max={max(same):.3f}")
    print(
        f"different speaker: n={len(different)} min={min(different):.3f} mean={np.mean(different):.3f}"
        f" max={max(different):.3f}"
    )


if __name__ == "__main__":
    main()
