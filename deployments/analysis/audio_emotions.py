"""Emotions from the audio, with an operator's classifier: a local Hugging Face audio-classification checkpoint
(e.g. a wav2vec2 or HuBERT fine-tuned on IEMOCAP/RAVDESS), given as `analysis.audio_emotion_model`. No such
weights ship offline, so this is optional; it runs where the audio is (the file pipeline), not in the Analyzer.

Its labels are mapped onto angry/sad/neutral/positive by name (`LABEL_MAP`); labels that map to none
(fear, disgust, ...) are dropped and the rest renormalized.
"""

from pathlib import Path

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


class AudioEmotionClassifier:
    def __init__(self, path: str | Path) -> None:
        import torch
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        path = Path(path).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"audio emotion model not found: {path}")
        self.torch = torch
        self.extractor = AutoFeatureExtractor.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForAudioClassification.from_pretrained(path, local_files_only=True).eval()
        names = {int(i): str(name).lower() for i, name in self.model.config.id2label.items()}
        self.columns = {i: LABEL_MAP[name] for i, name in names.items() if name in LABEL_MAP}
        if not self.columns:
            raise ValueError(f"none of the model's labels {sorted(names.values())} maps onto {EMOTION_LABELS}")

    def classify(self, samples: np.ndarray, spans: list[tuple[float, float]]) -> list[Emotion | None]:
        """One emotion per (start, end) span of the 16 kHz `samples`; None for spans shorter than 0.5 s."""
        result: list[Emotion | None] = []
        for start, end in spans:
            piece = samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
            if len(piece) < MIN_SECONDS * SAMPLE_RATE:
                result.append(None)
                continue
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
            result.append(Emotion(label=label, confidence=mapped[label], probs=mapped))
        return result
