"""Tier 1, in-process: the redaction fields at the edge over a fake pipeline: what the pipeline is asked (classes,
mode, the key's scope) on transcriptions, jobs and translations, and the 400s naming the field (an unknown class,
a mode without classes, a named-entity class for a language that has no model, AssemblyAI's policies)."""

import pytest

from deployments.redaction import RedactionClass
from tests.inprocess import PRICED_KEY, call
from tests.test_assemblyai_http import aai_call, finished, submit, upload

SYNC, ASYNC, TRANSLATE = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async", "/v1/audio/translations"
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}


@pytest.mark.parametrize("path", [SYNC, ASYNC, TRANSLATE])
def test_redact_reaches_the_pipeline_with_its_mode_and_the_keys_scope(inprocess, path) -> None:
    data = {"redact": ["person_name,credit_card_number"], "redact[]": ["email_address"], "redact_mode": "hash"}
    response = call(inprocess, "POST", path, files=AUDIO, data=data)
    assert response.status_code == 200, response.text
    redaction = inprocess.pipeline.requests[-1].options.redaction
    assert redaction.classes == [RedactionClass.person_name, RedactionClass.credit_card_number,
                                 RedactionClass.email_address]  # fmt: skip
    assert redaction.mode == "hash" and redaction.scope and redaction.audio is None
    other = call(inprocess, "POST", path, files=AUDIO, data=data, key=PRICED_KEY)
    assert other.status_code == 200 and inprocess.pipeline.requests[-1].options.redaction.scope != redaction.scope


def test_without_redact_nothing_is_redacted_and_the_default_mode_is_class(inprocess) -> None:
    call(inprocess, "POST", SYNC, files=AUDIO, data={})
    assert inprocess.pipeline.requests[-1].options.redaction is None
    call(inprocess, "POST", SYNC, files=AUDIO, data={"redact": "numbers"})
    redaction = inprocess.pipeline.requests[-1].options.redaction
    assert redaction is not None and redaction.mode == "class"


@pytest.mark.parametrize(
    ("form", "detail"),
    [
        ({"redact": "passport"}, "redact: unknown class 'passport'"),
        ({"redact_mode": "mask"}, "redact_mode requires redact"),
        ({"redact": "numbers", "redact_mode": "scramble"}, "redact_mode: 'scramble' is not a mode"),
        ({"redact": "person_name", "language": "fr"}, "person_name can be found in English only"),
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_bad_redaction_fields_are_a_400_naming_the_field(inprocess, path, form, detail) -> None:
    response = call(inprocess, "POST", path, files=AUDIO, data=form)
    assert response.status_code == 400, response.text
    assert detail in response.json()["detail"]
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


def test_a_translation_is_english_so_names_can_be_redacted_whatever_was_spoken(inprocess) -> None:
    response = call(inprocess, "POST", TRANSLATE, files=AUDIO, data={"redact": "person_name", "language": "fr"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"redact_pii_policies": ["person_name"]}, "redact_pii_policies needs redact_pii"),
        ({"redact_pii": True}, "redact_pii needs redact_pii_policies"),
        ({"redact_pii": True, "redact_pii_policies": ["medical_condition"]}, "medical_condition"),
        ({"redact_pii_audio": True}, "redact_pii_audio needs redact_pii"),
        ({"redact_pii": True, "redact_pii_policies": ["person_name"], "redact_pii_return_unredacted": True},
         "redact_pii_return_unredacted"),
        ({"redact_pii": True, "redact_pii_policies": ["person_name"], "language_code": "de"}, "English only"),
    ],
)  # fmt: skip
def test_assemblyais_redaction_fields_are_checked(inprocess, body, named) -> None:
    response = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": upload(inprocess), **body})
    assert response.status_code == 400 and named in response.json()["error"], response.text


def test_assemblyais_policies_and_substitution_reach_the_pipeline(inprocess) -> None:
    policies = ["person_name", "banking_information", "number_sequence"]
    created = submit(inprocess, audio_url=upload(inprocess), redact_pii=True, redact_pii_audio=True,
                     redact_pii_policies=policies)  # fmt: skip
    assert created["redact_pii_policies"] == policies and finished(inprocess, created["id"])["status"] == "completed"
    asked = inprocess.pipeline.requests[-1].options.redaction
    assert asked.classes == [RedactionClass.person_name, RedactionClass.iban, RedactionClass.numbers]
    assert (asked.mode, asked.mask_char, asked.audio) == ("mask", "#", "mp3")  # AssemblyAI's `hash` is ####
