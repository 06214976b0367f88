"""Tier 1, in-process: `hotwords` and `dictionary` on the transcription form and jobs: the three ways to send
the list, what the pipeline is asked, and each malformed list or unknown dictionary a 400 naming its field."""

import pytest

from deployments.vocabulary import MAX_TERMS
from tests.inprocess import call

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}


@pytest.mark.parametrize(
    "form",
    [
        {"hotwords": ["Nexara", "Zolvadex extended"]},
        {"hotwords[]": ["Nexara", "Zolvadex extended"]},
        {"hotwords": "Nexara, Zolvadex  extended"},
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_hotwords_in_each_form_reach_the_pipeline(inprocess, path: str, form: dict) -> None:
    response = call(inprocess, "POST", path, files=AUDIO, data=form)
    assert response.status_code == 200, response.text
    vocabulary = inprocess.pipeline.requests[-1].options.vocabulary
    assert vocabulary.terms == ("Nexara", "Zolvadex extended") and vocabulary.dictionary is None


def test_the_medical_dictionary_reaches_the_pipeline_and_none_asks_for_none(inprocess) -> None:
    assert call(inprocess, "POST", SYNC, files=AUDIO, data={"dictionary": "medical"}).status_code == 200
    assert inprocess.pipeline.requests[-1].options.vocabulary.dictionary == "medical"
    assert call(inprocess, "POST", SYNC, files=AUDIO, data={"dictionary": "none"}).status_code == 200
    assert inprocess.pipeline.requests[-1].options.vocabulary is None


@pytest.mark.parametrize(
    ("form", "field", "detail"),
    [
        ({"hotwords": ", ,"}, "hotwords", "no term"),
        ({"hotwords": ",".join(f"term{i}" for i in range(MAX_TERMS + 1))}, "hotwords", "at most"),
        ({"hotwords": "x" * 65}, "hotwords", "too long"),
        ({"hotwords": "one two three four five six seven"}, "hotwords", "too long"),
        ({"dictionary": "legal"}, "dictionary", "unknown dictionary 'legal'"),
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_a_bad_list_or_dictionary_is_a_400_naming_the_field(inprocess, path, form, field, detail) -> None:
    response = call(inprocess, "POST", path, files=AUDIO, data=form)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith(f"{field}: ") and detail in response.json()["detail"]
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []
