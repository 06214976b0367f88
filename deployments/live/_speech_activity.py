"""When someone speaks in a live stream, on the audio clock: Silero VAD over 32 ms windows, with hysteresis.

Speech starts after START_WINDOWS voiced windows (~100 ms), and ends after STOP_WINDOWS unvoiced ones
(~220 ms of silence), the delays the nexara protocol promises for `speech.started` and `speech.ended`. The
OpenAI protocol's server VAD chooses its own threshold and silence (`SpeechDetector(threshold, silence_ms)`).

The Silero model is the one faster-whisper ships and the file pipeline cuts with (`deployments/files/_chunking.py`),
run through its ONNX session: each call takes a run of windows, each with the 64 samples before it, and the
LSTM state (h, c) the last call left, so a stream scores exactly as the same audio in one piece
(tests/test_live_parts.py). Each session keeps its own state; the session is shared.
"""

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from faster_whisper.vad import get_vad_model

WINDOW = 512
"""Samples per Silero window at 16 kHz (32 ms)."""
WINDOW_MS = 32
CONTEXT = 64
"""Samples of the previous window the model sees with each window."""
START_THRESHOLD = 0.5
STOP_THRESHOLD = 0.35
START_WINDOWS = 3
STOP_WINDOWS = 7
HYSTERESIS = START_THRESHOLD - STOP_THRESHOLD
"""Speech stays on down to this much below the threshold that started it (Silero's own convention)."""


@dataclass(frozen=True)
class SpeechBoundary:
    kind: Literal["start", "end"]
    sample: int = 0
    """Where speech started (its first voiced window) or ended (past its last voiced window), in samples
    since the session's first."""


class SpeechDetector:
    def __init__(self, threshold: float = START_THRESHOLD, silence_ms: int = STOP_WINDOWS * WINDOW_MS) -> None:
        self.start_threshold = threshold
        self.stop_threshold = max(0.0, threshold - HYSTERESIS)
        self.stop_windows = max(1, math.ceil(silence_ms / WINDOW_MS))
        self.session = get_vad_model().session  # faster-whisper's cached model: one per process, thread-safe
        self.state = (np.zeros((1, 1, 128), np.float32), np.zeros((1, 1, 128), np.float32))
        self.context = np.zeros(CONTEXT, dtype=np.float32)
        self.pending = np.zeros(0, dtype=np.float32)
        self.position = 0  # samples scored so far
        self.speaking = False
        self.run = 0  # consecutive windows arguing for a change of state
        self.run_start = 0
        self.run_reached_start = False
        self.last_voiced_end = 0

    def restart(self) -> None:
        """The client ended the speech (a commit): speech starts again only on voice heard after it. Silence after
        the last word is still "speaking" until `stop_windows` of it have passed; a commit in that silence must
        not open a turn of it, which Whisper fills with "Thank you."."""
        self.speaking, self.run, self.run_reached_start = False, 0, False

    def feed(self, samples: np.ndarray) -> list[SpeechBoundary]:
        """Score the new samples; the speech starts and ends they complete, in order."""
        boundaries: list[SpeechBoundary] = []
        for probability in self.probabilities(samples):
            boundary = self._step(float(probability))
            if boundary is not None:
                boundaries.append(boundary)
            self.position += WINDOW
        return boundaries

    def probabilities(self, samples: np.ndarray) -> np.ndarray:
        """Speech probability of each window these samples complete, carrying the model's state on."""
        self.pending = np.concatenate([self.pending, samples])
        whole = len(self.pending) - len(self.pending) % WINDOW
        if whole == 0:
            return np.zeros(0, dtype=np.float32)
        windows, self.pending = self.pending[:whole].reshape(-1, WINDOW), self.pending[whole:]
        before = np.concatenate([self.context[None], windows[:-1, -CONTEXT:]])
        probabilities, h, c = self.session.run(
            None, {"input": np.concatenate([before, windows], axis=1), "h": self.state[0], "c": self.state[1]}
        )
        self.state, self.context = (h, c), windows[-1, -CONTEXT:].copy()
        flat: np.ndarray = probabilities.reshape(-1)
        return flat

    def _step(self, probability: float) -> SpeechBoundary | None:
        """Hysteresis over window probabilities: speech starts after START_WINDOWS windows in a row at or
        above the stop threshold of which one reached the start threshold, and ends after `stop_windows` in a
        row below the stop threshold."""
        voiced = probability >= self.stop_threshold
        if voiced:
            self.last_voiced_end = self.position + WINDOW
        if voiced == self.speaking:  # no change argued
            self.run, self.run_reached_start = 0, False
            return None
        if self.run == 0:
            self.run_start = self.position
        self.run += 1
        self.run_reached_start = self.run_reached_start or probability >= self.start_threshold
        if not self.speaking and self.run >= START_WINDOWS and self.run_reached_start:
            self.speaking, self.run, self.run_reached_start = True, 0, False
            return SpeechBoundary("start", self.run_start)
        if self.speaking and self.run >= self.stop_windows:
            self.speaking, self.run = False, 0
            return SpeechBoundary("end", self.last_voiced_end)
        return None
