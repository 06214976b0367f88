"""Speaker labels in a live session: each word's voice (a CAM++ embedding of the audio around it, computed
by the Diarizer deployment) is compared with the session's speakers so far, by cosine similarity to each
speaker's centroid. Close enough to one: theirs, and their centroid moves towards it; else a new speaker,
up to MAX_SPEAKERS (then the nearest). Labels are 0, 1, ... in order of first appearance and never change.
A word with less than half a second of audio kept around its middle gets the label of the word before."""

from collections.abc import Iterator

import numpy as np

from deployments.live._buffer import RecentAudio
from deployments.live._local_agreement import TimedWord
from deployments.live._models import EmbedVoices
from deployments.live.events import MAX_SPEAKERS
from deployments.types import SAMPLE_RATE

"""The nexara protocol's speaker ids are 0-3."""

SPEAKER_WINDOW_S = 1.5
"""Audio around a word's middle that its speaker embedding hears."""


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


class WordSpeakers:
    """Labels a channel's final words with their speakers, from the last 8 s heard (which a cut of the buffer at a
    pause does not shorten)."""

    def __init__(self, threshold: float, embed_voices: EmbedVoices, recent: RecentAudio) -> None:
        self.speakers = OnlineSpeakers(threshold)
        self.embed_voices = embed_voices
        self.recent = recent

    async def label(self, words: list[TimedWord]) -> list[int | None]:
        half = int(SPEAKER_WINDOW_S * SAMPLE_RATE / 2)
        windows: list[np.ndarray | None] = []
        for word in words:
            middle = int((word.start + word.end) / 2 * SAMPLE_RATE)
            heard = self.recent.between(middle - half, middle + half)
            windows.append(heard if len(heard) >= SAMPLE_RATE // 2 else None)
        usable = [window for window in windows if window is not None]
        embeddings: Iterator[np.ndarray] = iter(await self.embed_voices(usable) if usable else [])
        labels: list[int | None] = []
        for window in windows:
            label = self.speakers.assign(next(embeddings)) if window is not None else None
            labels.append(label if label is not None else (labels[-1] if labels else None))
        return labels
