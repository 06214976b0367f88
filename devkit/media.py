"""Test audio: real speech, the same speech encoded into every container the service accepts, and long files made
of it."""

import importlib.util
import io
from fractions import Fraction
from pathlib import Path
from typing import cast

import av
import numpy as np

from deployments.files.decoding import decode_audio
from deployments.types import SAMPLE_RATE

SHARED_AUDIO = Path(__file__).resolve().parents[2] / "shared" / "audio"
JFK_REFERENCE = (
    "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
)

# extension -> (container format, audio codec, with a video track?)
FORMATS: dict[str, tuple[str, str, bool]] = {
    "mp3": ("mp3", "libmp3lame", False),
    "wav": ("wav", "pcm_s16le", False),
    "m4a": ("ipod", "aac", False),
    "flac": ("flac", "flac", False),
    "ogg": ("ogg", "vorbis", False),
    "opus": ("opus", "libopus", False),
    "mp4": ("mp4", "aac", True),
    "mov": ("mov", "aac", True),
    "avi": ("avi", "libmp3lame", True),
    "mkv": ("matroska", "libopus", True),
}


def pyannote_sample() -> Path:
    """30 s of real two-speaker telephone speech that pyannote.audio installs with itself (found without
    importing pyannote.audio, which loads torch)."""
    spec = importlib.util.find_spec("pyannote.audio")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pyannote.audio is not installed, and its sample.wav with it")
    return Path(spec.origin).parent / "sample" / "sample.wav"


def encode(samples: np.ndarray, extension: str, sample_rate: int = 16_000) -> bytes:
    """Encode mono float32 `samples` into the container that `extension` names, in memory."""
    container_format, codec, with_video = FORMATS[extension]
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container_format) as container:
        rate = 48_000 if codec == "libopus" else sample_rate
        # FFmpeg's own Vorbis encoder is "experimental" and stereo-only.
        layout = "stereo" if codec == "vorbis" else "mono"
        options = {"strict": "-2"} if codec == "vorbis" else {}
        audio_stream = cast(av.AudioStream, container.add_stream(codec, rate=rate, layout=layout, options=options))
        video_stream = None
        if with_video:
            video_stream = container.add_stream("mpeg4", rate=5)
            video_stream.width, video_stream.height, video_stream.pix_fmt = 64, 48, "yuv420p"
        pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16).reshape(1, -1)
        source = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
        source.sample_rate = sample_rate
        frame_size = audio_stream.codec_context.frame_size or 1024
        resampler = av.AudioResampler(
            format=audio_stream.codec_context.format.name, layout=layout, rate=rate, frame_size=frame_size
        )
        for frame in [*resampler.resample(source), *resampler.resample(None)]:
            container.mux(audio_stream.encode(frame))
        container.mux(audio_stream.encode(None))
        if video_stream is not None:
            seconds = len(samples) / sample_rate
            for index in range(int(seconds * 5)):
                image = np.full((48, 64, 3), (index * 20) % 255, dtype=np.uint8)
                picture = av.VideoFrame.from_ndarray(image, format="rgb24")
                picture.pts, picture.time_base = index, Fraction(1, 5)
                container.mux(video_stream.encode(picture))
            container.mux(video_stream.encode(None))
    return buffer.getvalue()


def make_long_flac(path: Path, hours: float, speech_every_s: float = 1800.0) -> None:
    """Real speech at the start of every `speech_every_s`, silence elsewhere, written a block at a time."""
    speech = (np.clip(decode_audio(pyannote_sample()).samples, -1, 1) * 32767).astype(np.int16)
    silence = np.zeros(SAMPLE_RATE * 60, np.int16)
    total = int(hours * 3600 * SAMPLE_RATE)
    with av.open(str(path), mode="w", format="flac") as container:
        stream = container.add_stream("flac", rate=SAMPLE_RATE, layout="mono")
        stream.codec_context.options = {"frame_size": "32768"}  # long FLAC blocks: silence costs little
        written, next_speech = 0, 0
        while written < total:
            block = silence
            if written >= next_speech:
                block, next_speech = speech, next_speech + int(speech_every_s * SAMPLE_RATE)
            block = block[: total - written]
            frame = av.AudioFrame.from_ndarray(block.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate, frame.pts = SAMPLE_RATE, written
            container.mux(stream.encode(frame))
            written += len(block)
        container.mux(stream.encode(None))


def encode_channels(channels: list[np.ndarray], sample_rate: int = 16_000) -> bytes:
    """A WAV file (16-bit) holding each of `channels` (mono float32 samples, one length) as one channel."""
    layout = {1: "mono", 2: "stereo", 3: "2.1", 4: "quad"}[len(channels)]
    interleaved = (np.clip(np.stack(channels, axis=1), -1, 1) * 32767).astype(np.int16).reshape(1, -1)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="wav") as container:
        stream = container.add_stream("pcm_s16le", rate=sample_rate, layout=layout)
        frame = av.AudioFrame.from_ndarray(interleaved, format="s16", layout=layout)
        frame.sample_rate = sample_rate
        container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return buffer.getvalue()
