"""The `openai` SDK's diarized_json call, unchanged but for `base_url`, against the running service: the
two-speaker call (pyannote's sample.wav) with one speaker known from a reference clip and the other from an
enrolled voice (`voices`), each cut from a stretch where only that speaker talks (sample.rttm: speaker90 alone
over 10.6-14.4 s, speaker91 over 21.8-27.8 s), and both named right; and a clip that is not audio refused,
naming it."""

import base64

import numpy as np
import openai
import pytest
from openai.types.audio import TranscriptionDiarized

from devkit.media import encode
from tests.conftest import Service
from tests.test_voices_service import enrolled

RATE = 16_000
SOLO = {"alice": (11.0, 14.0), "bob": (22.0, 26.0)}
"""Where only one speaker talks (sample.rttm's speaker90 and speaker91), with margin: each reference's stretch."""


def reference(samples: np.ndarray, start: float, end: float, extension: str) -> str:
    clip = encode(samples[int(start * RATE) : int(end * RATE)], extension)
    media_type = {"wav": "audio/wav", "flac": "audio/flac"}[extension]
    return f"data:{media_type};base64,{base64.b64encode(clip).decode()}"


def speaker_at(result: TranscriptionDiarized, start: float, end: float) -> str:
    """The speaker of the segment that overlaps [start, end] most."""
    return max(result.segments, key=lambda s: min(end, s.end) - max(start, s.start)).speaker


def test_diarized_json_names_a_speaker_by_clip_and_one_by_enrolled_voice(
    openai_client: openai.OpenAI, service: Service, call_samples: np.ndarray
) -> None:
    """alice from a reference clip (OpenAI's fields), bob from a voice enrolled before (`voices`, this service's):
    both kinds name speakers in one request, one name each."""
    bob_clip = encode(call_samples[int(SOLO["bob"][0] * RATE) : int(SOLO["bob"][1] * RATE)], "flac")
    with service.client() as client:
        bob = enrolled(client, "bob", bob_clip)
    try:
        result = openai_client.audio.transcriptions.create(
            file=("call.flac", encode(call_samples, "flac")),
            model="gpt-4o-transcribe-diarize",
            response_format="diarized_json",
            chunking_strategy="auto",
            known_speaker_names=["alice"],
            known_speaker_references=[reference(call_samples, *SOLO["alice"], "wav")],
            extra_body={"voices": [bob]},
        )
    finally:
        with service.client() as client:
            client.delete(f"/v1/voices/{bob}")
    assert isinstance(result, TranscriptionDiarized) and result.task == "transcribe"
    assert result.usage is not None and result.usage.type == "duration" and abs(result.usage.seconds - 30.0) < 0.1
    assert all(segment.type == "transcript.text.segment" for segment in result.segments)
    assert {segment.speaker for segment in result.segments} == {"alice", "bob"}
    assert speaker_at(result, 10.6, 14.4) == "alice" and speaker_at(result, 21.8, 27.8) == "bob"
    assert speaker_at(result, 14.8, 17.8) == "bob"  # speaker91's other turn, outside either reference
    assert "know you were there" in result.text.lower()


def test_server_vad_chunking_and_a_clip_that_is_not_audio(
    openai_client: openai.OpenAI, call_samples: np.ndarray
) -> None:
    audio = ("call.wav", encode(call_samples[: 12 * RATE], "wav"))
    result = openai_client.audio.transcriptions.create(
        file=audio,
        model="gpt-4o-transcribe-diarize",
        response_format="diarized_json",
        chunking_strategy={
            "type": "server_vad",
            "threshold": 0.5,
            "prefix_padding_ms": 300,
            "silence_duration_ms": 200,
        },
    )
    assert isinstance(result, TranscriptionDiarized) and "know you were there" in result.text.lower()
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.audio.transcriptions.create(
            file=audio,
            model="gpt-4o-transcribe-diarize",
            response_format="diarized_json",
            known_speaker_names=["alice", "bob"],
            known_speaker_references=[
                reference(call_samples, *SOLO["alice"], "wav"),
                "data:audio/wav;base64," + base64.b64encode(b"certainly not a wav file").decode(),
            ],
        )
    assert refused.value.response.json()["detail"].startswith("known_speaker_references[1]: audio processing failed")
