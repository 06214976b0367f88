"""Emotions from the audio, with an operator's classifier: a local Hugging Face audio-classification checkpoint
(e.g. a wav2vec2 or HuBERT fine-tuned on IEMOCAP/RAVDESS), given as `analysis.audio_emotion_model`. No such
weights ship offline, so this is optional; the `AudioEmotions` deployment (`audio_deployment`) holds it, and the
file pipeline, which has the audio, sends it each diarized segment's samples. The Analyzer never sees audio.

Its labels are mapped onto angry/sad/neutral/positive by name (`LABEL_MAP`); labels that map to none
(fear, disgust, ...) are dropped and the rest renormalized.
"""

from pathlib import Path
from typing import Any

import numpy as np

from deployments.types import EMOTION_LABELS, SAMPLE_RATE, Emotion

LABEL_MAP = {
    "ang": "angry", "angry": "angry", "anger": "angry", "frustrated": "angry", "fru": "angry",
    "sad": "sad", "sadness": "sad",
    "neu": "neutral", "neutral": "neutral", "calm": "neutral",
    "hap": "positive", "happy": "positive", "happiness": "positive", "joy": "positive", "exc": "positive",
    "excited": "positive", "positive": "positive", "pleasant_surprise": "positive", "surprised": "positive",
}  # fmt: skip
MIN_SECONDS = 0.5
"""Shorter spans are not judged (None): too little of a voice to tell."""
MAX_SECONDS = 30.0
"""Of a longer span only its middle this long is heard: the model's cost grows with the length, its answer does not."""


def heard_span(start: float, end: float) -> tuple[float, float]:
    """The part of the span (start, end) that is classified: all of it, or its middle `MAX_SECONDS`."""
    if end - start <= MAX_SECONDS:
        return start, end
    middle = (start + end) / 2
    return middle - MAX_SECONDS / 2, middle + MAX_SECONDS / 2


class AudioEmotionClassifier:
    def __init__(self, path: str | Path) -> None:
        import torch
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        path = Path(path).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"audio emotion model not found: {path}")
        self.torch = torch
        extractors: Any = AutoFeatureExtractor  # typed in some transformers releases, untyped in others
        self.extractor = extractors.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForAudioClassification.from_pretrained(path, local_files_only=True).eval()
        names = {int(i): str(name).lower() for i, name in self.model.config.id2label.items()}
        self.columns = {i: LABEL_MAP[name] for i, name in names.items() if name in LABEL_MAP}
        if not self.columns:
            raise ValueError(f"none of the model's labels {sorted(names.values())} maps onto {EMOTION_LABELS}")

    def classify(self, samples: np.ndarray, spans: list[tuple[float, float]]) -> list[Emotion | None]:
        """One emotion per (start, end) span of the 16 kHz `samples`; None for spans shorter than 0.5 s."""
        return self.classify_pieces([samples[int(a * SAMPLE_RATE) : int(b * SAMPLE_RATE)] for a, b in spans])

    def classify_pieces(self, pieces: list[np.ndarray]) -> list[Emotion | None]:
        """One emotion per piece of 16 kHz audio (the samples of one segment each); None for pieces shorter than
        0.5 s. A piece longer than `MAX_SECONDS` is heard in its middle."""
        return [self._one(piece) for piece in pieces]

    def _one(self, piece: np.ndarray) -> Emotion | None:
        if len(piece) < MIN_SECONDS * SAMPLE_RATE:
            return None
        extra = len(piece) - int(MAX_SECONDS * SAMPLE_RATE)
        if extra > 0:
            piece = piece[extra // 2 : extra // 2 + int(MAX_SECONDS * SAMPLE_RATE)]
        inputs = self.extractor(piece, sampling_rate=SAMPLE_RATE, return_tensors="pt")
        with self.torch.inference_mode():
            logits = self.model(**inputs).logits[0]
        probs = self.torch.softmax(logits, dim=-1).tolist()
        mapped = dict.fromkeys(EMOTION_LABELS, 0.0)
        for column, label in self.columns.items():
            mapped[label] += probs[column]
        total = sum(mapped.values()) or 1.0
        mapped = {label: round(p / total, 4) for label, p in mapped.items()}
        label = max(mapped, key=lambda name: mapped[name])
        return Emotion(label=label, confidence=mapped[label], probs=mapped)
