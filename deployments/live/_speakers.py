"""Speaker labels in a live session: each word's voice (a CAM++ embedding of the audio around it, computed
by the Diarizer deployment) is compared with the session's speakers so far, by cosine similarity to each
speaker's centroid. Close enough to one: theirs, and their centroid moves towards it; else a new speaker,
up to MAX_SPEAKERS (then the nearest). Labels are 0, 1, ... in order of first appearance and never change.

A word only just close enough is doubtful: it is labelled theirs without moving their centroid, and a run of
doubtful words is a new speaker. A word with less than half a second of audio kept around its middle, or whose
middle is within SAME_SOUND_S of the last embedded word's, gets the label of the word before."""

from collections.abc import Iterator

import numpy as np

from deployments.diarization.names import match_speakers
from deployments.live._buffer import RecentAudio
from deployments.live._local_agreement import TimedWord
from deployments.live._models import EmbedVoices
from deployments.live.events import MAX_SPEAKERS
from deployments.types import SAMPLE_RATE, KnownVoice

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
MIN_NAMING_WORDS = 6
"""Embedded words a speaker has before they are compared with the enrolled voices: a few seconds of their voice,
so that a name is given to a steady centroid, not to a first word's."""
DOUBTFUL_RUN = 3
"""Doubtful words in a row that are a new speaker (one or two are a turn's blended edge)."""


class OnlineSpeakers:
    def __init__(self, threshold: float, max_speakers: int = MAX_SPEAKERS) -> None:
        self.threshold = threshold
        self.max_speakers = max_speakers
        self.sums: list[np.ndarray] = []  # per speaker, the sum of their unit-length embeddings
        self.counts: list[int] = []  # per speaker, how many embeddings that sum holds
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
                self.counts[best] += 1
                return best
            if similarity[best] >= self.threshold:
                self.doubtful.append(voice)
                if len(self.doubtful) < DOUBTFUL_RUN:
                    return best
                return self._new(self.doubtful)
        return self._new([voice])

    def _new(self, voices: list[np.ndarray]) -> int:
        self.sums.append(np.sum(voices, axis=0))
        self.counts.append(len(voices))
        self.doubtful = []
        return len(self.sums) - 1


class VoiceNames:
    """Live speakers named by enrolled voices (`voices`): once a speaker has MIN_NAMING_WORDS embedded words,
    their centroid is compared with the voices not yet given to anyone, as a file's speakers are
    (`deployments.diarization.names.match_speakers`: one name per speaker, from `threshold` up). A name, once
    given, stays: the events already sent carry it."""

    def __init__(self, voices: list[KnownVoice], threshold: float) -> None:
        self.voices = voices
        self.threshold = threshold
        self.names: dict[int, str] = {}

    def update(self, speakers: OnlineSpeakers) -> None:
        taken = set(self.names.values())
        free = [voice for voice in self.voices if voice.name not in taken]
        ready = {
            str(label): total / np.linalg.norm(total)
            for label, (total, count) in enumerate(zip(speakers.sums, speakers.counts, strict=True))
            if count >= MIN_NAMING_WORDS and label not in self.names
        }
        if not free or not ready:
            return
        vectors = [np.asarray(voice.embedding) for voice in free]
        matched = match_speakers(ready, vectors, [voice.name for voice in free], self.threshold)
        self.names |= {int(label): name for label, name in matched.items()}


class WordSpeakers:
    """Labels a channel's final words with their speakers, from the audio heard recently (which a cut of the buffer at a
    pause does not shorten), and names them by the session's enrolled voices."""

    def __init__(
        self,
        threshold: float,
        embed_voices: EmbedVoices,
        recent: RecentAudio,
        voices: list[KnownVoice] | None = None,
        voice_threshold: float = 0.55,
    ) -> None:
        self.speakers = OnlineSpeakers(threshold)
        self.voice_names = VoiceNames(voices or [], voice_threshold)
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
        if self.voice_names.voices:
            self.voice_names.update(self.speakers)
        return labels

    def name_of(self, label: int | None) -> str | None:
        """The enrolled voice's name of a speaker label, once matched."""
        return None if label is None else self.voice_names.names.get(label)
