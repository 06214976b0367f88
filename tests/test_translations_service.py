"""The `openai` SDK's translation call, unchanged but for `base_url`, against the running service. The test
service runs the English-only tiny.en (tests/conftest.py), which cannot translate: the SDK gets a 400 that says
so. Real translation is tested with the multilingual base model in-process
(tests/test_translations.py)."""

import numpy as np
import openai
import pytest

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample


def test_an_english_only_model_refuses_to_translate(openai_client: openai.OpenAI) -> None:
    speech = decode_audio(pyannote_sample()).samples[6 * 16_000 : 13 * 16_000].astype(np.float32)
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.audio.translations.create(file=("speech.wav", encode(speech, "wav")), model="whisper-1")
    assert "English-only: it cannot translate" in refused.value.response.json()["detail"]


def test_a_transcription_field_is_refused_by_name(openai_client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.audio.translations.create(
            file=("speech.wav", b"RIFF"), model="whisper-1", extra_body={"num_speakers": "2"}
        )
    detail = refused.value.response.json()["detail"]
    assert detail.startswith("not supported by /v1/audio/translations: 'num_speakers'")
