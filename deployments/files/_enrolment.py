"""An enrolment clip's speech: the clip decoded, Silero VAD's speech kept (the chunker's settings), at least
`min_speech_s` of it or a 400 naming `file`, at most `max_speech_s` (a longer clip is trimmed to its first).
Silence and pauses left in would pull the voice's embedding towards the room, not the speaker. A job's recording
is read only where its speaker talks alone (the spans the edge gives)."""

import numpy as np

from deployments.config import VoicesConfig
from deployments.errors import AudioRejectedError, InputRejectedError
from deployments.files._chunking import SpeechChunker
from deployments.files.decoding import decode_windows
from deployments.types import SAMPLE_RATE


def enrolment_speech(
    path: str, config: VoicesConfig, spans: list[tuple[float, float]] | None = None, field: str = "file"
) -> np.ndarray:
    """The clip's speech, 16 kHz float32 (AudioRejectedError naming `field` when it holds too little). With
    `spans` (seconds: a speaker's turns in a job's recording), only those stretches of it, whatever its length."""
    try:
        windows = list(decode_windows(path, max_duration_s=config.max_clip_s if spans is None else None))
    except InputRejectedError as error:
        raise AudioRejectedError(f"{field}: {error}") from None
    samples = np.concatenate(windows) if windows else np.zeros(0, dtype=np.float32)
    del windows
    if spans is not None:
        cut = [samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)] for start, end in spans]
        samples = np.concatenate(cut) if cut else np.zeros(0, dtype=np.float32)
    speech = SpeechChunker().speech(samples)
    parts = [samples[start:end] for start, end in speech]
    kept = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    seconds = len(kept) / SAMPLE_RATE
    if seconds < config.min_speech_s:
        raise AudioRejectedError(
            f"{field}: the clip holds {seconds:.1f} s of speech; a voice needs {config.min_speech_s:g} to"
            f" {config.max_speech_s:g} s of one speaker talking"
        )
    return kept[: int(config.max_speech_s * SAMPLE_RATE)].astype(np.float32, copy=False)
