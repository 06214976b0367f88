"""Known speakers' reference clips, decoded before the file: each spooled clip (as the client sent it, any
format the file may have) becomes a 16 kHz float32 copy beside it that the Diarizer reads, or a 400 that
names the clip (`known_speaker_references[i]: ...`)."""

from pathlib import Path

import numpy as np

from deployments.errors import AudioRejectedError, InputRejectedError
from deployments.files.decoding import decode_windows
from deployments.storage.spool import decoded_copy_path
from deployments.types import SAMPLE_RATE, KnownSpeaker

MIN_REFERENCE_S = 1.5
"""Shorter clips are refused. OpenAI asks for 2 to 10 s; half a second less is let through, since a clip cut
at 2 s often decodes a few milliseconds short, and CAM++ embeds 1.5 s of one voice steadily."""
MAX_REFERENCE_S = 10.5
"""Longer clips are refused (OpenAI's 10 s, and room for a container's padding)."""


def decode_references(known: list[KnownSpeaker]) -> list[KnownSpeaker]:
    """The known speakers with each clip's decoded copy as `reference_path` (the caller removes the copies)."""
    decoded: list[KnownSpeaker] = []
    try:
        for index, speaker in enumerate(known):
            copy = decoded_copy_path(speaker.reference_path)
            samples = _decoded(speaker.reference_path, index)
            samples.astype(np.float32).tofile(copy)
            decoded.append(speaker.model_copy(update={"reference_path": str(copy)}))
    except BaseException:
        remove_decoded(decoded)
        raise
    return decoded


def remove_decoded(known: list[KnownSpeaker]) -> None:
    for speaker in known:
        Path(speaker.reference_path).unlink(missing_ok=True)


def _decoded(path: str, index: int) -> np.ndarray:
    field = f"known_speaker_references[{index}]"
    try:
        windows = list(decode_windows(path, max_duration_s=MAX_REFERENCE_S))
    except InputRejectedError as error:
        raise AudioRejectedError(f"{field}: {error}") from None
    samples = np.concatenate(windows) if windows else np.zeros(0, dtype=np.float32)
    seconds = len(samples) / SAMPLE_RATE
    if seconds < MIN_REFERENCE_S:
        raise AudioRejectedError(
            f"{field}: the clip is too short ({seconds:.2f} s): give {MIN_REFERENCE_S:g} to 10 s of the speaker's voice"
        )
    return samples
