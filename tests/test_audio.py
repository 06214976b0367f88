"""The PyAV decoder on real speech in every accepted container, and on broken input."""

import numpy as np
import pytest

from deployments.files.decoding import AudioDecodeError, decode_audio
from devkit.media import FORMATS, encode, pyannote_sample
from tests.hostile_inputs import video_without_audio


def test_sample_is_16k_mono_float32_of_the_right_length() -> None:
    audio = decode_audio(pyannote_sample())
    assert audio.samples.dtype == np.float32 and audio.samples.ndim == 1
    assert audio.duration == pytest.approx(30.0, abs=0.01)


@pytest.mark.parametrize("extension", sorted(FORMATS))
def test_every_container_decodes_to_the_same_speech(greeting_samples: np.ndarray, extension: str) -> None:
    decoded = decode_audio(encode(greeting_samples, extension))
    assert decoded.duration == pytest.approx(4.0, abs=0.15)  # encoders pad by a frame or two
    assert np.sqrt(np.mean(decoded.samples**2)) == pytest.approx(np.sqrt(np.mean(greeting_samples**2)), rel=0.2)


def test_file_path_and_bytes_give_the_same_samples() -> None:
    path = pyannote_sample()
    assert np.array_equal(decode_audio(path).samples, decode_audio(path.read_bytes()).samples)


def test_truncated_mp3_keeps_what_decoded(greeting_samples: np.ndarray) -> None:
    mp3 = encode(greeting_samples, "mp3")
    decoded = decode_audio(mp3[: len(mp3) // 2])
    assert 1.0 < decoded.duration < 3.0


@pytest.mark.parametrize("data", [b"", b"RIFF" + b"\x00" * 100, bytes(range(256)) * 50])
def test_garbage_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(AudioDecodeError, match="not a readable audio or video container"):
        decode_audio(data)


def test_video_without_audio_track_is_a_decode_error() -> None:
    video = video_without_audio()
    with pytest.raises(AudioDecodeError, match="no audio track"):
        decode_audio(video)
