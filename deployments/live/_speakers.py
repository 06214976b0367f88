"""Speaker labels in a live session: each word's voice (a CAM++ embedding of the audio around it, computed
by the Diarizer deployment) is compared with the session's speakers so far, by cosine similarity to each
speaker's centroid. Close enough to one: theirs, and their centroid moves towards it; else a new speaker,
up to MAX_SPEAKERS (then the nearest). Labels are 0, 1, ... in order of first appearance and never change.

A word only just close enough is doubtful: it is labelled theirs without moving their centroid, and a run of
doubtful words is a new speaker. A word with less than half a second of audio kept around its middle, or whose
middle is within SAME_SOUND_S of the last embedded word's, gets the label of the word before."""

from collections.abc import Iterator

import numpy as np

from deployments.live._buffer import RecentAudio
from deployments.live._local_agreement import TimedWord
from deployments.live._models import EmbedVoices
from deployments.live.events import MAX_SPEAKERS
from deployments.types import SAMPLE_RATE

SPEAKER_WINDOW_S = 1.5
"""Audio around a word's middle that its speaker embedding hears."""
SAME_SOUND_S = 0.25
"""Words whose middles are closer than this hear nearly the same window: one embedding labels them all. Whisper
looping on a short reading can write a dozen words into a fraction of a second; embedded one by one they weighed
that moment a dozen times in a centroid, and when it was the other speaker's, merged the two."""
DOUBT = 0.1
"""A word less than this above the threshold is doubtful. A call's first seconds, two people saying hello in
turns under 1.5 s, make the first centroid a blend of both, which the second voice then only just missed or
only just met: met, the two merged into one label for the whole call (one CI run in five, the call at 2x)."""
DOUBTFUL_RUN = 3
"""Doubtful words in a row that are a new speaker (one or two are a turn's blended edge)."""


class OnlineSpeakers:
    def __init__(self, threshold: float, max_speakers: int = MAX_SPEAKERS) -> None:
        self.threshold = threshold
        self.max_speakers = max_speakers
        self.sums: list[np.ndarray] = []  # per speaker, the sum of their unit-length embeddings
        self.doubtful: list[np.ndarray] = []  # the run of doubtful words just labelled

    def assign(self, embedding: np.ndarray) -> int:
        voice = embedding / (np.linalg.norm(embedding) + 1e-9)
        if self.sums:
            centroids = np.stack([total / np.linalg.norm(total) for total in self.sums])
            similarity = centroids @ voice
            best = int(np.argmax(similarity))
            if similarity[best] >= self.threshold + DOUBT or len(self.sums) >= self.max_speakers:
                self.doubtful = []
                self.sums[best] = self.sums[best] + voice
                return best
            if similarity[best] >= self.threshold:
                self.doubtful.append(voice)
                if len(self.doubtful) < DOUBTFUL_RUN:
                    return best
                return self._new(self.doubtful)
        return self._new([voice])

    def _new(self, voices: list[np.ndarray]) -> int:
        self.sums.append(np.sum(voices, axis=0))
        self.doubtful = []
        return len(self.sums) - 1


class WordSpeakers:
    """Labels a channel's final words with their speakers, from the last 8 s heard (which a cut of the buffer at a
    pause does not shorten)."""

    def __init__(self, threshold: float, embed_voices: EmbedVoices, recent: RecentAudio) -> None:
        self.speakers = OnlineSpeakers(threshold)
        self.embed_voices = embed_voices
        self.recent = recent
        self.last_middle = -SAMPLE_RATE  # of the last word embedded (samples)
        self.last_label: int | None = None  # of the last word labelled

    async def label(self, words: list[TimedWord]) -> list[int | None]:
        half, same = int(SPEAKER_WINDOW_S * SAMPLE_RATE / 2), int(SAME_SOUND_S * SAMPLE_RATE)
        windows: list[np.ndarray | None] = []
        for word in words:
            middle = int((word.start + word.end) / 2 * SAMPLE_RATE)
            heard = self.recent.between(middle - half, middle + half)
            embedded = middle - self.last_middle >= same and len(heard) >= SAMPLE_RATE // 2
            windows.append(heard if embedded else None)
            self.last_middle = middle if embedded else self.last_middle
        usable = [window for window in windows if window is not None]
        embeddings: Iterator[np.ndarray] = iter(await self.embed_voices(usable) if usable else [])
        labels: list[int | None] = []
        for window in windows:
            if window is not None:
                self.last_label = self.speakers.assign(next(embeddings))
            labels.append(self.last_label)
        return labels
