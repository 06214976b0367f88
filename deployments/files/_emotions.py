"""Emotions from the audio, when the operator set `analysis.audio_emotion_model`: the samples of each diarized
segment are read from the file's decoded spool and sent to the `AudioEmotions` deployment, a batch at a time, so
this replica holds at most `BATCH_S` seconds of them and the classifier's replicas scale on their own."""

import asyncio
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ray.serve.handle import DeploymentHandle

from deployments.analysis.audio_emotions import heard_span
from deployments.retry import retry_on_worker_loss
from deployments.types import SAMPLE_RATE, DiarizedSegment, Emotion

BATCH_S = 60.0
"""Seconds of audio per call to the classifier, at most (one longer segment alone may reach MAX_SECONDS)."""


def segment_samples(decoded: Path, start: float, end: float) -> np.ndarray:
    """The heard part (`heard_span`) of the segment (start, end) from the decoded spool: raw 16 kHz float32."""
    start, end = heard_span(start, end)
    first = max(int(start * SAMPLE_RATE), 0)
    count = max(int(end * SAMPLE_RATE) - first, 0)
    if count == 0:
        return np.zeros(0, dtype=np.float32)
    return np.fromfile(decoded, dtype=np.float32, count=count, offset=first * np.dtype(np.float32).itemsize)


def batches(segments: Sequence[DiarizedSegment]) -> Iterator[Sequence[DiarizedSegment]]:
    """Consecutive segments whose heard audio adds up to at most `BATCH_S` seconds (or one segment)."""
    first, seconds = 0, 0.0
    for index, segment in enumerate(segments):
        start, end = heard_span(segment.start, segment.end)
        length = max(end - start, 0.0)
        if index > first and seconds + length > BATCH_S:
            yield segments[first:index]
            first, seconds = index, 0.0
        seconds += length
    if first < len(segments):
        yield segments[first:]


def _pieces(decoded: Path, segments: Sequence[DiarizedSegment]) -> list[np.ndarray]:
    return [segment_samples(decoded, segment.start, segment.end) for segment in segments]


async def emotions_from_audio(
    classifier: DeploymentHandle[Any], decoded: Path, segments: Sequence[DiarizedSegment]
) -> list[Emotion | None]:
    """One emotion per segment, in order (None where a segment is too short to judge)."""
    emotions: list[Emotion | None] = []
    for batch in batches(segments):
        pieces = await asyncio.to_thread(_pieces, decoded, batch)
        emotions.extend(await retry_on_worker_loss(functools.partial(classifier.classify.remote, pieces), "emotions"))
    return emotions
