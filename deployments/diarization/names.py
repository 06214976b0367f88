"""Speakers named by voices: the one-to-one pairing of speakers' centroids and known voices (reference clips,
enrolled voices) with the highest summed cosine similarity (Hungarian), each pair kept only above a threshold.
Files' diarization (`_known_speakers`) and live sessions' speaker labels (`deployments/live/_speakers.py`) both
name speakers with it."""

import numpy as np
from scipy.optimize import linear_sum_assignment


def similarities(centroids: dict[str, np.ndarray], references: list[np.ndarray]) -> np.ndarray:
    """(speakers, references) cosine similarities, speakers in `centroids`' order."""
    if not centroids or not references:
        return np.zeros((len(centroids), len(references)))
    matrix: np.ndarray = np.stack(list(centroids.values())) @ np.stack(references).T
    return matrix


def match_speakers(
    centroids: dict[str, np.ndarray], references: list[np.ndarray], names: list[str], threshold: float
) -> dict[str, str]:
    """Diarizer label -> known name, for the best one-to-one pairing of speakers and names whose similarity
    reaches `threshold`. Several references of one name (a voice enrolled twice, or a clip and a voice) are one
    candidate, scored by the closest of them: one name never goes to two speakers."""
    scores = similarities(centroids, references)
    if scores.size == 0:
        return {}
    distinct = list(dict.fromkeys(names))
    columns_of = {name: [index for index, given in enumerate(names) if given == name] for name in distinct}
    by_name = np.stack([scores[:, columns_of[name]].max(axis=1) for name in distinct], axis=1)
    labels = list(centroids)
    rows, columns = linear_sum_assignment(by_name, maximize=True)
    return {
        labels[row]: distinct[column]
        for row, column in zip(rows, columns, strict=True)
        if by_name[row, column] >= threshold
    }
