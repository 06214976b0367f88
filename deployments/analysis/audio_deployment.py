"""AudioEmotions: the deployment that holds the operator's audio emotion classifier (`analysis.audio_emotion_model`),
loaded once per replica. The application has it only when that setting is set.

It is sent the 16 kHz samples of each diarized segment by the file pipeline (which has the audio) and answers one
emotion per segment; it never reads files. As the Analyzer does with its LLM, a classifier that cannot be loaded
does not stop the application: transcription goes on, and each request for emotions is a 502 whose cause is logged.
"""

import asyncio
import logging

import numpy as np
from ray import serve

from deployments.analysis.audio_emotions import AudioEmotionClassifier
from deployments.analysis.errors import AudioEmotionsUnavailable
from deployments.types import Emotion

logger = logging.getLogger("ray.serve")


@serve.deployment(max_ongoing_requests=8)
class AudioEmotions:
    def __init__(self, model: str) -> None:
        self.classifier: AudioEmotionClassifier | None = None
        self.unavailable = ""
        try:
            self.classifier = AudioEmotionClassifier(model)  # torch and transformers are imported here, in the replica
        except Exception as error:  # any failure to load: the reason is logged, requests for emotions are 502s
            self.unavailable = f"{type(error).__name__}: {error}"
            logger.error("no audio emotion classifier (%s); requests for emotions get 502", self.unavailable)
        self.lock = asyncio.Lock()  # one forward pass at a time: torch uses the replica's cores for each

    async def classify(self, pieces: list[np.ndarray]) -> list[Emotion | None]:
        """One emotion per piece of 16 kHz float32 audio (None for pieces under 0.5 s). Raises
        AudioEmotionsUnavailable when the classifier could not be loaded."""
        classifier = self.classifier
        if classifier is None:
            raise AudioEmotionsUnavailable(f"no audio emotion classifier: {self.unavailable}")
        async with self.lock:
            return await asyncio.to_thread(classifier.classify_pieces, pieces)

    def check_health(self) -> None:
        """Serve's health check: healthy also without a classifier (requests for emotions are 502s)."""
