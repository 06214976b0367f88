"""Has the speaker finished their turn? Smart Turn v3.2 (Daily, BSD-2-Clause) judges it from the sound of the
last 8 s of speech (intonation, a trailing "and..."), not only from silence.

The ONNX model ships inside the `pipecat-ai` wheel; it is read from the installed package's files without
importing pipecat (whose import sets up its own logging). Its input is Whisper's log-mel features of 8 s
of 16 kHz audio, left-padded with silence and normalised to zero mean and unit variance: computed here by
faster-whisper's feature extractor, which gives the features pipecat's own extractor does
(tests/test_live_parts.py checks it).
"""

import importlib.util
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
from faster_whisper.feature_extractor import FeatureExtractor

from deployments.types import SAMPLE_RATE

MODEL_FILE = "audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
WINDOW_S = 8
COMPLETE = 0.5
"""At or above this probability the turn is complete (the model's own decision threshold)."""


def model_path() -> Path:
    spec = importlib.util.find_spec("pipecat")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pipecat-ai is not installed, and the Smart Turn model with it")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


class SmartTurnModel:
    """One ONNX session for a replica's sessions; `probability` is blocking (run it off the event loop)."""

    def __init__(self) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_path()), sess_options=options)
        self.extractor = FeatureExtractor(chunk_length=WINDOW_S)
        self.lock = threading.Lock()

    def features(self, speech: np.ndarray) -> np.ndarray:
        """(80, 800) log-mel frames of the last 8 s, as the model was trained on them."""
        window = WINDOW_S * SAMPLE_RATE
        speech = np.pad(speech[-window:], (window - len(speech[-window:]), 0)).astype(np.float32)
        normalised = (speech - speech.mean()) / np.sqrt(speech.var() + 1e-7)
        frames: np.ndarray = self.extractor(normalised, padding=0)[:, : self.extractor.nb_max_frames]
        return frames.astype(np.float32)

    def probability(self, speech: np.ndarray) -> float:
        """The probability that the turn whose audio ends here is complete."""
        features = self.features(speech)[None]
        with self.lock:
            (output,) = self.session.run(None, {"input_features": features})
        return float(output[0][0])
