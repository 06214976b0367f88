"""Decode any container/codec FFmpeg knows into 16 kHz mono float32, with PyAV (no ffmpeg binary).

Plain functions, no Ray: the AudioDecoder deployment, the benchmarks and the tests all decode with them.
"""

import io
import logging
from pathlib import Path

import av
import numpy as np

from deployments.types import SAMPLE_RATE, DecodedAudio

logger = logging.getLogger(__name__)


class AudioDecodeError(ValueError):
    """The input is not audio we can decode; the message says why, for the client."""


def decode_audio(source: bytes | str | Path) -> DecodedAudio:
    """Decode the first audio stream of `source` (bytes or a file path), resampled to 16 kHz mono.

    A stream that breaks part-way (a truncated mp3, say) keeps what decoded before the break, as
    ffmpeg does; a stream that yields no audio at all is an error.
    """
    stream_source = io.BytesIO(source) if isinstance(source, bytes) else str(source)
    try:
        container = av.open(stream_source, mode="r", metadata_errors="ignore")
    except av.FFmpegError as error:
        raise AudioDecodeError(f"the file is not a readable audio or video container ({error.strerror})") from None
    with container:
        if not container.streams.audio:
            raise AudioDecodeError("the file has no audio track")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        pieces: list[np.ndarray] = []
        try:
            for frame in container.decode(stream):
                pieces.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(frame))
        except av.FFmpegError as error:
            if not pieces:
                raise AudioDecodeError(f"the audio stream could not be decoded ({error.strerror})") from None
            logger.warning("audio stream broke off after %d pieces: %s", len(pieces), error)
        pieces.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(None))
    samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    return DecodedAudio(samples=samples.astype(np.float32, copy=False))
