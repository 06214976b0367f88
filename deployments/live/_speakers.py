"""Speaker labels in a live session: each word's voice (a CAM++ embedding of the audio around it, computed
by the Diarizer deployment) is compared with the session's speakers so far, by cosine similarity to each
speaker's centroid. Close enough to one: theirs, and their centroid moves towards it; else a new speaker,
up to MAX_SPEAKERS (then the nearest). Labels are 0, 1, ... in order of first appearance and never change."""

import numpy as np

from deployments.live.events import MAX_SPEAKERS

"""The nexara protocol's speaker ids are 0-3."""


class OnlineSpeakers:
    def __init__(self, threshold: float, max_speakers: int = MAX_SPEAKERS) -> None:
        self.threshold = threshold
        self.max_speakers = max_speakers
        self.sums: list[np.ndarray] = []  # per speaker, the sum of their unit-length embeddings

    def assign(self, embedding: np.ndarray) -> int:
        voice = embedding / (np.linalg.norm(embedding) + 1e-9)
        if self.sums:
            centroids = np.stack([total / np.linalg.norm(total) for total in self.sums])
            similarity = centroids @ voice
            best = int(np.argmax(similarity))
            if similarity[best] >= self.threshold or len(self.sums) >= self.max_speakers:
                self.sums[best] = self.sums[best] + voice
                return best
        self.sums.append(voice.copy())
        return len(self.sums) - 1
