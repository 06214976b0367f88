"""Enrolled voices the clustering merged into another speaker: split out by short windows.

A cluster that holds two people (far-field meetings: two similar voices in one segmentation window) gets one
centroid between both, which can match only one of their enrolled voices. When a request's voices include
some that matched no speaker, the exclusive speech is cut into short windows (the resegmentation's), each is
embedded, and a window goes to such a voice where it is at least `WINDOW_THRESHOLD` similar to it and
`WINDOW_MARGIN` more similar to it than to its own speaker's window centroid. Frames follow the windows by
majority, as in the resegmentation (`_resegmentation.moved_frames`); each voice that wins at least
`MIN_SPLIT_S` of speech becomes a new speaker, named by it. Measured (scripts/bench_voices.py): see
docs/voices.md.
"""

from collections.abc import Callable

import numpy as np
from pyannote.core import Annotation

from deployments.config import ResegmentationConfig
from deployments.diarization._resegmentation import (
    FRAMES_PER_SECOND,
    frame_owner,
    moved_frames,
    redraw,
    speech_windows,
)

WINDOW_THRESHOLD = 0.5
"""A 1.5 s window's similarity to an enrolled voice from which it may be that voice's (windows score lower than
whole speakers' centroids: the same speaker's windows 0.45-0.8 against their voice, on the AMI excerpts)."""
WINDOW_MARGIN = 0.1
"""...and by which it must beat its own speaker's centroid."""
MIN_SPLIT_S = 1.0
"""Less speech than this won by a voice is noise, not a speaker."""

WindowEmbedder = Callable[[np.ndarray], np.ndarray]


def split_voices(
    turns: Annotation,
    exclusive: Annotation,
    frame_count: int,
    embed_windows: WindowEmbedder,
    voices: dict[str, np.ndarray],
    config: ResegmentationConfig,
) -> tuple[Annotation, Annotation, dict[str, str]]:
    """(turns, exclusive turns, new label -> voice name) with the windows of `voices` (name -> unit embedding:
    voices that matched no speaker) split out of the speakers that held them."""
    labels = sorted(turns.labels())
    if not voices or not labels:
        return turns, exclusive, {}
    owner = frame_owner(exclusive, labels, frame_count)
    bounds, before = speech_windows(owner, len(labels), config)
    if not len(bounds):
        return turns, exclusive, {}
    embeddings = embed_windows(bounds)
    embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-9)
    centroids = np.zeros((len(labels), embeddings.shape[1]))
    for speaker in np.unique(before):
        mean = embeddings[before == speaker].mean(axis=0)
        centroids[speaker] = mean / max(float(np.linalg.norm(mean)), 1e-9)
    names = list(voices)
    to_voice = embeddings @ np.stack([voices[name] for name in names]).T  # (windows, voices)
    to_own = np.einsum("wd,wd->w", embeddings, centroids[before])
    best = to_voice.argmax(axis=1)
    best_score = to_voice[np.arange(len(best)), best]
    wins = (best_score >= WINDOW_THRESHOLD) & (best_score >= to_own + WINDOW_MARGIN)
    after = np.where(wins, len(labels) + best, before)
    moved = moved_frames(owner, bounds, before, after, len(labels) + len(names))
    new_labels = [*labels, *_new_labels(labels, len(names))]
    kept: dict[str, str] = {}
    for index, name in enumerate(names):
        speaker = len(labels) + index
        if np.count_nonzero(moved == speaker) < MIN_SPLIT_S * FRAMES_PER_SECOND:
            moved[moved == speaker] = owner[moved == speaker]  # too little: back to whom it was
        else:
            kept[new_labels[speaker]] = name
    if not kept:
        return turns, exclusive, {}
    turns, exclusive = redraw(turns, moved, new_labels)
    return turns, exclusive, kept


def _new_labels(labels: list[str], count: int) -> list[str]:
    """`count` labels no speaker has (pyannote's style: SPEAKER_nn); the edge renames speakers in order anyway."""
    made: list[str] = []
    number = len(labels)
    while len(made) < count:
        if f"SPEAKER_{number:02d}" not in labels:
            made.append(f"SPEAKER_{number:02d}")
        number += 1
    return made
