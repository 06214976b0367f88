"""Domain vocabulary through the running service (Whisper tiny.en) and the official clients, unchanged but for
`base_url`: `hotwords` (openai SDK, `extra_body`) makes names the model misses without them come out right in a
sentence espeak-ng voices; the nexara SDK's `dictionary="medical"` writes a drug name right; a malformed list
and an unknown dictionary are 400s naming the field."""

from pathlib import Path

import nexara
import numpy as np
import openai
import pytest

from devkit.media import encode
from devkit.vocabulary_set import espeak_ng, voiced
from tests.conftest import Service

NAMES = "Our team keeps the analytics in ClickHouse and the logins in Supabase."
DRUG = "Her blood pressure improved after we added lisinopril to the morning pills."


@pytest.fixture(scope="module")
def openai_client(service: Service) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{service.base_url}/v1", api_key=service.api_key, max_retries=0, timeout=300)


def spoken(text: str, folder: Path) -> bytes:
    if espeak_ng() is None:
        pytest.skip("espeak-ng is not installed")
    samples: np.ndarray = voiced(text, "en", folder)
    return encode(samples, "wav")


def test_hotwords_make_the_names_the_model_misses_come_out_right(openai_client: openai.OpenAI, tmp_path: Path) -> None:
    audio = ("names.wav", spoken(NAMES, tmp_path))
    plain = openai_client.audio.transcriptions.create(model="whisper-1", file=audio).text
    assert not ("ClickHouse" in plain and "Supabase" in plain), plain  # what the hotwords are for
    hot = openai_client.audio.transcriptions.create(
        model="whisper-1", file=audio, extra_body={"hotwords": ["ClickHouse", "Supabase"]}
    ).text
    assert "ClickHouse" in hot and "Supabase" in hot, hot
    assert "analytics" in hot and "team" in hot  # the other words stay


def test_the_nexara_sdks_medical_dictionary_writes_the_drug_right(service: Service, tmp_path: Path) -> None:
    client = nexara.Nexara(api_key=service.api_key, base_url=f"{service.base_url}/v1", max_retries=0, timeout=300)
    audio = spoken(DRUG, tmp_path)
    plain = client.transcriptions.create(file=audio).text
    assert "lisinopril" not in plain.lower(), plain
    medical = client.transcriptions.create(file=audio, dictionary="medical").text
    assert "lisinopril" in medical.lower() and "blood pressure" in medical.lower(), medical


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"hotwords": [f"term{i}" for i in range(201)]}, "hotwords"),
        ({"hotwords": ["a term of far more than six words said here"]}, "hotwords"),
        ({"hotwords": " , "}, "hotwords"),
        ({"dictionary": "legal"}, "dictionary"),
    ],
)
def test_a_malformed_list_or_unknown_dictionary_is_a_400_naming_the_field(
    openai_client: openai.OpenAI, greeting: bytes, extra: dict, field: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client.audio.transcriptions.create(model="whisper-1", file=("g.wav", greeting), extra_body=extra)
    assert raised.value.status_code == 400 and raised.value.response.json()["detail"].startswith(f"{field}: ")
