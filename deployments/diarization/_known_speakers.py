"""Known speakers: name the diarized speakers whose voice matches a client's reference clip (OpenAI's
`known_speaker_names[]` + `known_speaker_references[]`) or an enrolled voice (`voices`, deployments/voices/).

Each diarized speaker gets a centroid: the mean of the speaker encoder's embeddings of their exclusive turns,
weighted by length. Each reference clip is embedded whole by the same encoder; an enrolled voice brings its
embedding. Speakers and names are paired by the assignment that maximises the summed cosine similarity
(Hungarian), so two speakers never get the same name; a pair is kept only above the threshold
(`DiarizationConfig.known_speaker_threshold`).
"""

from collections.abc import Callable

import numpy as np

from deployments.diarization.names import match_speakers
from deployments.types import SAMPLE_RATE, SpeakerTurn

__all__ = ["match_speakers", "speaker_centroids"]

Embed = Callable[[np.ndarray], np.ndarray]
"""16 kHz samples of one voice -> its L2-normalised embedding."""

MIN_TURN_S = 0.5
"""Shorter turns are left out of a centroid: too little speech for a steady embedding."""
MAX_WINDOW_S = 10.0
"""A long turn is embedded in windows of at most this much audio."""


def speaker_centroids(samples: np.ndarray, turns: list[SpeakerTurn], embed: Embed) -> dict[str, np.ndarray]:
    """Each speaker's L2-normalised centroid from `turns` (the exclusive ones: no overlapped speech). A speaker
    whose every turn is shorter than MIN_TURN_S gets none (and so no name)."""
    sums: dict[str, np.ndarray] = {}
    for turn in turns:
        start, end = int(turn.start * SAMPLE_RATE), min(int(turn.end * SAMPLE_RATE), len(samples))
        step = int(MAX_WINDOW_S * SAMPLE_RATE)
        for at in range(start, end, step):
            window = samples[at : min(at + step, end)]
            if len(window) < MIN_TURN_S * SAMPLE_RATE:
                continue
            weighted = embed(window) * len(window)
            sums[turn.speaker] = sums[turn.speaker] + weighted if turn.speaker in sums else weighted
    return {speaker: total / np.linalg.norm(total) for speaker, total in sums.items()}
