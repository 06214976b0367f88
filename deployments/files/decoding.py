"""Decode any container/codec FFmpeg knows into 16 kHz mono float32, with PyAV (no ffmpeg binary).

Decoding streams: `decode_windows` yields the audio a window at a time, so a 10-hour file never sits in
memory whole, and a file that decodes to more than the duration limit (a decompression bomb: hours of
near-silence in a few MB) is refused as soon as decoding passes the limit, not after the rest.

Plain functions, no Ray: the pipeline deployment, the benchmarks and the tests all decode with them.
"""

import io
import logging
from collections.abc import Generator, Iterator
from pathlib import Path

import av
import numpy as np

from deployments.errors import AudioRejectedError
from deployments.types import SAMPLE_RATE, DecodedAudio

logger = logging.getLogger(__name__)

WINDOW_S = 60.0
"""Seconds of audio per decoded window: 3.8 MB of float32."""


class AudioDecodeError(AudioRejectedError):
    """The input is not audio we can decode; the message says why, for the client. (No __init__ of its own:
    Ray rebuilds an exception from its args when it crosses to the caller's process.)"""


def decode_failed(reason: str) -> AudioDecodeError:
    return AudioDecodeError(f"audio processing failed: {reason}")


def too_long(max_duration_s: float, seconds: float | None = None) -> AudioRejectedError:
    how_long = f" ({seconds:.0f} s)" if seconds is not None else ""
    return AudioRejectedError(f"audio is too long{how_long}: the maximum is {max_duration_s:.0f} s")


def declared_duration(path: str | Path) -> float | None:
    """The duration the container's header declares, when it declares one (a cheap first check; the
    decoder counts samples anyway, since a header can lie)."""
    try:
        with av.open(str(path), mode="r", metadata_errors="ignore") as container:
            if container.duration is not None and container.duration > 0:
                return container.duration / av.time_base
            streams = container.streams.audio
            if streams and streams[0].duration is not None and streams[0].time_base is not None:
                return float(streams[0].duration * streams[0].time_base)
    except av.FFmpegError:
        return None  # the decoder says what is wrong
    return None


def open_audio(source: str | Path | bytes) -> av.container.InputContainer:
    """The container, which has an audio stream (its first is the one read), or the AudioDecodeError that tells
    the client why not."""
    try:
        container = av.open(
            io.BytesIO(source) if isinstance(source, bytes) else str(source), mode="r", metadata_errors="ignore"
        )
    except av.FFmpegError as error:
        raise decode_failed(f"the file is not a readable audio or video container ({error.strerror})") from None
    if not container.streams.audio:
        container.close()
        raise decode_failed("the file has no audio track")
    return container


def decode_windows(
    source: str | Path | bytes, window_s: float = WINDOW_S, max_duration_s: float | None = None
) -> Generator[np.ndarray, None, None]:
    """Decode the first audio stream of `source` (a file's path, or its bytes) into 16 kHz mono float32 windows of
    `window_s` seconds (the last one shorter).

    A stream that breaks part-way (a truncated mp3, say) keeps what decoded before the break, as ffmpeg
    does; a stream that yields no audio at all is an error. Passing `max_duration_s` stops decoding with
    an AudioRejectedError at the first window beyond it.
    """
    window = max(1, int(window_s * SAMPLE_RATE))
    limit = None if max_duration_s is None else int(max_duration_s * SAMPLE_RATE)
    container = open_audio(source)
    with container:
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        pending: list[np.ndarray] = []
        pending_samples = decoded = 0

        def take(frames: list[av.AudioFrame]) -> Iterator[np.ndarray]:
            nonlocal pending, pending_samples, decoded
            for frame in frames:
                samples = frame.to_ndarray().reshape(-1)
                pending.append(samples)
                pending_samples += len(samples)
                decoded += len(samples)
            if limit is not None and max_duration_s is not None and decoded > limit:
                raise too_long(max_duration_s)
            while pending_samples >= window:
                joined = np.concatenate(pending)
                yield joined[:window]
                rest = joined[window:]
                pending, pending_samples = ([rest] if len(rest) else []), len(rest)

        try:
            for frame in container.decode(stream):
                yield from take(resampler.resample(frame))
        except av.FFmpegError as error:
            if decoded == 0:
                raise decode_failed(f"the audio stream could not be decoded ({error.strerror})") from None
            logger.warning("audio stream broke off after %.1f s: %s", decoded / SAMPLE_RATE, error)
        yield from take(resampler.resample(None))
        if pending_samples:
            yield np.concatenate(pending)


def decode_audio(source: str | Path | bytes) -> DecodedAudio:
    """The whole file at once, for tests and benchmarks (the service streams with `decode_windows`)."""
    windows = list(decode_windows(source))
    samples = np.concatenate(windows) if windows else np.zeros(0, dtype=np.float32)
    return DecodedAudio(samples=samples.astype(np.float32, copy=False))
