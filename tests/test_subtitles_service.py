"""srt and vtt through the running service with the openai SDK: the cues follow the subtitle rules (lines,
line count, duration, reading speed, no overlap), the asked rules are kept, a bad value is the SDK's
BadRequest/422 naming it."""

import io
import itertools

import numpy as np
import openai
import pytest
import srt
import webvtt

from devkit.media import encode
from tests.conftest import Service


@pytest.fixture(scope="module")
def call_wav(call_samples: np.ndarray) -> bytes:
    return encode(call_samples, "wav")


def test_srt_cues_follow_the_default_rules(openai_client: openai.OpenAI, call_wav: bytes) -> None:
    document = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("call.wav", call_wav), response_format="srt"
    )
    cues = list(srt.parse(str(document)))
    assert len(cues) >= 3
    for cue in cues:
        lines = cue.content.split("\n")
        assert len(lines) <= 2 and all(len(line) <= 42 for line in lines)
        shown = (cue.end - cue.start).total_seconds()
        assert 0 < shown <= 7.0
        assert len(" ".join(lines)) / 20 <= shown + 0.001  # read at 20 characters a second at most (ms rounding)
    assert all(before.end <= after.start for before, after in itertools.pairwise(cues))


def test_vtt_keeps_the_asked_rules_and_a_bad_value_names_the_field(
    openai_client: openai.OpenAI, service: Service, call_wav: bytes
) -> None:
    document = openai_client.audio.transcriptions.create(
        model="whisper-1",
        file=("call.wav", call_wav),
        response_format="vtt",
        extra_body={"max_line_width": 24, "max_line_count": 1, "subtitle_word_highlights": True},
    )
    captions = webvtt.from_buffer(io.StringIO(str(document))).captions
    assert captions and all(len(caption.text.split("\n")) == 1 for caption in captions)
    assert "<c>" in str(document)
    with service.client() as client:
        bad = client.post(
            "/v1/audio/transcriptions",
            files={"file": ("call.wav", call_wav)},
            data={"response_format": "srt", "max_line_width": "3"},
        )
    assert bad.status_code == 422 and "max_line_width" in str(bad.json()["detail"])
