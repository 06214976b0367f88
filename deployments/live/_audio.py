"""Raw PCM frames of a live session -> 16 kHz float32 samples per channel.

Frames need not end on a sample boundary, so a partial sample waits for the next frame. G.711 (mu-law,
A-law) is expanded by the standard library's `audioop` (`audioop-lts` from Python 3.13), other rates are
resampled by soxr's streaming resampler, which keeps its filter state between frames.
"""

import sys

import numpy as np
import soxr

from deployments.live.events import BYTES_PER_SAMPLE, SessionSettings
from deployments.types import SAMPLE_RATE

if sys.version_info < (3, 13):
    import warnings

    with warnings.catch_warnings():  # deprecated in 3.11-3.12, removed in 3.13 (then audioop-lts provides it)
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
else:  # pragma: no cover
    import audioop

LOUDEST_FLOAT = 64.0
"""pcm_f32le samples are nominally in [-1, 1]; values far outside (or NaN) mean the client sent another
encoding than it declared."""


class InvalidAudioError(ValueError):
    """The bytes are not audio in the session's declared encoding."""


class PcmDecoder:
    def __init__(self, settings: SessionSettings) -> None:
        self.encoding = settings.encoding
        self.channels = settings.channels
        self.downmix = settings.channels == 2 and not settings.multichannel
        self.frame_bytes = BYTES_PER_SAMPLE[settings.encoding] * settings.channels
        self.pending = b""
        self.frames_received = 0  # samples per channel, at the client's rate
        self.sample_rate = settings.sample_rate
        outputs = 1 if self.downmix else self.channels
        self.resamplers = (
            [soxr.ResampleStream(settings.sample_rate, SAMPLE_RATE, 1, dtype="float32") for _ in range(outputs)]
            if settings.sample_rate != SAMPLE_RATE
            else []
        )

    @property
    def duration_ms(self) -> int:
        """Audio received, from the bytes sent: what the session is billed for, per channel."""
        return self.frames_received * 1000 // self.sample_rate

    def decode(self, data: bytes) -> list[np.ndarray]:
        """The frame's whole samples, as one 16 kHz float32 array per output channel."""
        data = self.pending + data
        whole = len(data) - len(data) % self.frame_bytes
        self.pending = data[whole:]
        interleaved = self._samples(data[:whole])
        self.frames_received += len(interleaved) // self.channels
        per_channel = interleaved.reshape(-1, self.channels).T
        if self.downmix:
            per_channel = per_channel.mean(axis=0, keepdims=True)
        return [self._resampled(index, np.ascontiguousarray(samples)) for index, samples in enumerate(per_channel)]

    def flush(self) -> list[np.ndarray]:
        """What the resamplers still hold, at the end of input."""
        if not self.resamplers:
            return [np.zeros(0, dtype=np.float32) for _ in range(1 if self.downmix else self.channels)]
        empty = np.zeros(0, dtype=np.float32)
        return [resampler.resample_chunk(empty, last=True) for resampler in self.resamplers]

    def _samples(self, data: bytes) -> np.ndarray:
        if self.encoding == "pcm_s16le":
            return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
        if self.encoding == "pcm_f32le":
            samples = np.frombuffer(data, dtype="<f4").astype(np.float32)
            if samples.size and not (np.isfinite(samples).all() and np.abs(samples).max() <= LOUDEST_FLOAT):
                raise InvalidAudioError(
                    "pcm_f32le samples must be finite floats in [-1, 1]: check the encoding you declared"
                )
            return samples
        expand = audioop.ulaw2lin if self.encoding == "pcm_mulaw" else audioop.alaw2lin
        return np.frombuffer(expand(data, 2), dtype="<i2").astype(np.float32) / 32768.0

    def _resampled(self, channel: int, samples: np.ndarray) -> np.ndarray:
        if not self.resamplers:
            return samples
        resampled: np.ndarray = self.resamplers[channel].resample_chunk(samples)
        return resampled
