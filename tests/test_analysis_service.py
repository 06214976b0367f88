"""Understanding the conversation through the running service, with the `nexara` SDK unchanged and the real
embedded model (SmolLM2-135M in llama.cpp): a prompt's text and JSON answers, role-tagged speakers in each
roles mode, emotions, usage with tokens and flags, the SDK's typed errors for 400 and 502, and a job.

The test service answers in at most 32 tokens (conftest.ANALYSIS_CONFIG): the model is small and slow, so
the assertions hold the contract (shapes, validity, labels), not the answers' quality (README's figures)."""

import json

import httpx
import jsonschema
import nexara
import pytest
from nexara.types.diarization import EMOTION_LABELS, Diarization
from nexara.types.transcription import LLMResult

from tests.conftest import Service

KEY = "test-key-analysis"  # conftest.KEYS_FILE: its own usage statement, used by this module only
SCHEMA = {
    "type": "object",
    "properties": {"greeting": {"type": "boolean"}, "mood": {"type": "string", "enum": ["calm", "tense"]}},
    "required": ["greeting", "mood"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def nexara_client(service: Service) -> nexara.Nexara:
    return nexara.Nexara(api_key=KEY, base_url=f"{service.base_url}/v1", max_retries=0, timeout=300)


def test_a_prompt_gets_the_transcription_and_a_text_answer(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    result = nexara_client.transcriptions.create(file=greeting, prompt="Who is speaking? Answer in one sentence.")
    assert isinstance(result, LLMResult)
    assert "know you were there" in result.transcription.text.lower() and result.transcription.segments
    assert isinstance(result.llm_output, str) and result.llm_output.strip()


def test_a_prompt_with_a_schema_gets_an_object_valid_against_it(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    result = nexara_client.transcriptions.create(file=greeting, prompt="Is this a greeting?", json_schema=SCHEMA)
    assert isinstance(result.llm_output, dict)
    jsonschema.validate(result.llm_output, SCHEMA)


def test_roles_auto_tag_the_speakers_and_keep_the_mapping(service: Service, greeting: bytes) -> None:
    with service.client(KEY) as http:
        body = http.post(
            "/v1/audio/transcriptions", files={"file": ("g.wav", greeting)}, data={"task": "diarize", "roles": "auto"}
        ).json()
    roles = body["roles"]
    assert roles and all(label.startswith("speaker_") for label in roles)
    assert all(role.strip() for role in roles.values())
    assert {segment["speaker"] for segment in body["segments"]} <= set(roles.values())
    assert {word["speaker"] for word in body["words"]} <= set(roles.values())
    Diarization.model_validate(body)  # what the SDK parses


def test_roles_from_a_list_with_emotions(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    result = nexara_client.transcriptions.create(
        file=greeting, task="diarize", roles=["caller", "listener"], emotions=True, model="nexara-ru"
    )
    assert isinstance(result, Diarization) and result.segments
    assert {segment.speaker for segment in result.segments} <= {"caller", "listener", "unknown"}
    emotions = [segment.emotion for segment in result.segments if segment.emotion is not None]
    assert emotions, "no segment was judged"
    for emotion in emotions:
        assert emotion.label in EMOTION_LABELS and 0 <= emotion.confidence <= 1
        assert emotion.probs is not None and sum(emotion.probs.values()) == pytest.approx(1.0, abs=1e-3)


def test_a_job_with_a_schema_and_a_job_with_role_descriptions(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    prompted = nexara_client.transcriptions.create_job(file=greeting, prompt="Is this a greeting?", json_schema=SCHEMA)
    described = nexara_client.transcriptions.create_job(
        file=greeting, task="diarize", roles={"caller": "the one who says hello first", "host": "the other one"}
    )
    result = prompted.wait(timeout=300, poll_interval=0.5)
    assert isinstance(result, LLMResult) and "know you were there" in result.transcription.text.lower()
    jsonschema.validate(result.llm_output, SCHEMA)
    diarized = described.wait(timeout=300, poll_interval=0.5)
    assert isinstance(diarized, Diarization)
    assert {segment.speaker for segment in diarized.segments} <= {"caller", "host", "unknown"}


def test_usage_items_carry_the_tokens_and_flags(nexara_client: nexara.Nexara) -> None:
    """After the requests above (this module's key): each analysis is billed with its tokens; the roles and
    emotions flags are set where they were returned."""
    items = list(nexara_client.billing.iter_usage(max_items=50))
    assert len(items) >= 5
    analysed = [item for item in items if item.llm_input_tokens]
    assert len(analysed) >= 5 and all(item.llm_output_tokens is not None for item in analysed)
    assert any(item.llm_output_tokens for item in analysed)  # prompts write; emotions and listed roles only read
    assert any(item.role_tagging and item.emotions and item.model == "nexara-ru" for item in items)
    assert any(item.role_tagging and not item.emotions for item in items)
    assert all(item.cost is not None and item.cost > 0 for item in items)


def test_the_sdks_typed_errors(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    """400: roles the server cannot parse (the SDK passes a string through); 502: a valid schema that no
    answer satisfies (the grammar gives {"n": <int>}, which its `not` refuses), asked twice. The 413 of a spent
    synchronous budget: tests/test_analysis.py (the Analyzer's budget) and tests/test_analysis_http.py (the
    edge's 413 and the SDK's SyncLLMTimeoutError); outrunning it here took a minute of the test loop."""
    with pytest.raises(nexara.BadRequestError, match="roles must be"):
        nexara_client.transcriptions.create(file=greeting, task="diarize", roles="caller, agent")
    never = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "not": {"required": ["n"]}}
    with pytest.raises(nexara.BadGatewayError, match="JSON schema"):
        nexara_client.transcriptions.create(file=greeting, prompt="How many speakers?", json_schema=never)


def test_refused_combinations_sent_raw_are_400(service: Service, greeting: bytes) -> None:
    with service.client(KEY) as http:
        for form, detail in [
            ({"json_schema": json.dumps(SCHEMA)}, "json_schema requires prompt"),
            ({"prompt": "Sum up.", "response_format": "srt"}, "prompt cannot be combined with response_format"),
            ({"emotions": "true", "task": "diarize"}, "requires model=nexara-ru"),
        ]:
            response = http.post("/v1/audio/transcriptions", files={"file": ("g.wav", greeting)}, data=form)
            assert response.status_code == 400 and detail in response.json()["detail"], response.text


def test_openai_clients_are_unaffected_without_the_new_fields(service: Service, greeting: bytes) -> None:
    body = httpx.post(
        f"{service.base_url}/v1/audio/transcriptions",
        headers={"Authorization": f"Bearer {service.api_key}"},
        files={"file": ("g.wav", greeting)},
        data={"model": "whisper-1", "response_format": "verbose_json"},
        timeout=300,
    ).json()
    assert body["task"] == "transcribe" and "llm_output" not in body


def test_diarize_with_a_prompt_is_an_llm_result_around_the_diarized_transcript(
    nexara_client: nexara.Nexara, greeting: bytes
) -> None:
    result = nexara_client.transcriptions.create(file=greeting, task="diarize", prompt="Who speaks first?")  # type: ignore[call-overload]  # the SDK types prompt for transcribe only
    assert isinstance(result, LLMResult) and isinstance(result.llm_output, str)
    assert result.transcription.task == "diarize" and result.transcription.segments
    assert all(segment.end > segment.start for segment in result.transcription.segments)
