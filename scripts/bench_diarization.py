"""Diarization quality and speed of the embedded pipeline, with pyannote.metrics.

DER is scored the strict way: no forgiveness collar, overlapped speech scored.

- `sample.wav` (30 s, two speakers, shipped with pyannote.audio with `sample.rttm`): the held-out test.
- `stereo_diarization.wav` (../shared, one speaker per channel): the pipeline hears the mono mix-down;
  the reference is each channel's speech (Silero VAD), labelled by channel.

Each file runs twice: speaker count found by clustering, then with `num_speakers` given.

    .venv/bin/python -m scripts.bench_diarization
"""

import argparse
import time
from dataclasses import dataclass

import av
import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps
from pyannote.core import Annotation, Segment
from pyannote.database.util import load_rttm
from pyannote.metrics.diarization import DiarizationErrorRate

from deployments.audio import decode_audio
from deployments.config import DiarizationConfig
from deployments.diarizer import DiarizationPipeline
from deployments.types import SAMPLE_RATE
from tests.media import SHARED_AUDIO, pyannote_sample


@dataclass
class Case:
    name: str
    samples: np.ndarray
    reference: Annotation


def strict_der(reference: Annotation, hypothesis: Annotation) -> float:
    return DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hypothesis)


def sample_case() -> Case:
    path = pyannote_sample()
    reference = next(iter(load_rttm(str(path.with_suffix(".rttm"))).values()))
    return Case("sample.wav", decode_audio(path).samples, reference)


def channels(path: str) -> np.ndarray:
    """(channels, samples) float32 at 16 kHz."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="fltp", layout=stream.layout.name, rate=SAMPLE_RATE)
        pieces = [out.to_ndarray() for frame in container.decode(stream) for out in resampler.resample(frame)]
    return np.concatenate(pieces, axis=1)


def speech_of(samples: np.ndarray) -> list[tuple[float, float]]:
    options = VadOptions(min_silence_duration_ms=300, speech_pad_ms=0)
    return [(t["start"] / SAMPLE_RATE, t["end"] / SAMPLE_RATE) for t in get_speech_timestamps(samples, options)]


def stereo_case() -> Case | None:
    path = SHARED_AUDIO / "stereo_diarization.wav"
    if not path.exists():
        return None
    stereo = channels(str(path))
    reference = Annotation()
    for channel, samples in enumerate(stereo):
        for start, end in speech_of(np.ascontiguousarray(samples)):
            reference[Segment(start, end), f"{channel}"] = f"channel {channel}"
    return Case("stereo_diarization.wav (mono mix)", stereo.mean(axis=0).astype(np.float32), reference)


def run(pipeline: DiarizationPipeline, case: Case, **hints: object) -> tuple[float, Annotation, float]:
    started = time.perf_counter()
    hypothesis, _ = pipeline.annotate(case.samples, **hints)
    return strict_der(case.reference, hypothesis), hypothesis, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    config = DiarizationConfig()
    pipeline = DiarizationPipeline(config)

    run(pipeline, sample_case())  # warm-up
    print(f"embedded pipeline, clustering threshold {config.clustering_threshold}; strict DER (no collar, overlap)")
    print(f"{'audio':48s} {'DER %':>6s} {'speakers (ref)':>15s} {'seconds':>8s} {'RTF':>6s}")
    for case in filter(None, [sample_case(), stereo_case()]):
        for hints, label in [({}, ""), ({"num_speakers": len(case.reference.labels())}, ", num_speakers")]:
            der, hypothesis, seconds = run(pipeline, case, **hints)
            duration = case.samples.size / SAMPLE_RATE
            found = f"{len(hypothesis.labels())} ({len(case.reference.labels())})"
            print(f"{case.name + label:48s} {der * 100:6.1f} {found:>15s} {seconds:8.2f} {seconds / duration:6.3f}")


if __name__ == "__main__":
    main()
