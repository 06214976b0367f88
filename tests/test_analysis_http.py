"""Tier 1, in-process: the analysis fields at the edge (prompt, json_schema, roles, emotions) over a fake
pipeline whose Analyzer answers made-up findings: every combination the nexara SDK refuses is a 400 sent raw,
what the pipeline is asked, the wire bodies (LLMResult, role-tagged speakers, emotions), 413/502, jobs,
usage, and `prompt` under analysis.prompt_field: whisper."""

import asyncio
import json

import nexara
import openai
import pytest
from nexara._http import AsyncHttpxTransport  # nexara==0.7.* (pyproject): its documented test injection point
from nexara.resources.transcriptions import parse_result
from nexara.types.transcription import LLMResult as SDKLLMResult

from deployments.analysis.errors import AnalysisTimeout, LLMBackendError, LLMOutputInvalid
from deployments.jobs.records import owner_of
from deployments.types import Analysis
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity, render_body
from tests.inprocess import DIARIZED, KEY, PRICED_KEY, call

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}
SCHEMA = json.dumps({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]})
DIARIZE_RU = {"task": "diarize", "model": "nexara-ru"}


@pytest.mark.parametrize(
    ("form", "detail"),
    [
        ({"json_schema": SCHEMA}, "json_schema requires prompt"),
        ({"prompt": "Sum up.", "response_format": "json"}, "prompt cannot be combined with response_format=json"),
        ({"prompt": "Sum up.", "response_format": "srt"}, "prompt cannot be combined with response_format=srt"),
        (
            {"prompt": "Sum up.", "response_format": "verbose_json", "timestamp_granularities[]": "word"},
            "prompt cannot be combined with timestamp_granularities[]",
        ),
        ({"prompt": "   "}, "prompt is empty"),
        ({"prompt": "Sum up.", "json_schema": "{not json"}, "json_schema is not valid JSON"),
        ({"prompt": "Sum up.", "json_schema": "[1, 2]"}, "json_schema must be a JSON object"),
        ({"prompt": "Sum up.", "json_schema": '{"type": "no-such-type"}'}, "json_schema is not a valid JSON Schema"),
        ({"prompt": "Sum up.", "stream": "true"}, "stream=true cannot be combined with prompt"),
        ({"roles": "auto"}, "roles requires task=diarize"),
        ({"task": "diarize", "roles": "client, agent"}, 'roles must be "auto", a JSON list'),
        ({"task": "diarize", "roles": '"client"'}, 'roles must be "auto", a JSON list'),
        ({"task": "diarize", "roles": "[]"}, "roles is empty"),
        ({"task": "diarize", "roles": json.dumps([f"r{n}" for n in range(11)])}, "at most 10 roles; got 11"),
        ({"task": "diarize", "roles": json.dumps(["a" * 65])}, "longer than 64 characters"),
        ({"task": "diarize", "roles": '["client", "client"]'}, "roles must not repeat a name"),
        ({"task": "diarize", "roles": '{"client": "x", "client": "y"}'}, "a role name is repeated"),
        ({"task": "diarize", "roles": '{"client": ""}'}, "the description of role 'client' must be a non-empty"),
        ({"task": "diarize", "roles": json.dumps({"client": "x" * 501})}, "longer than 500 characters"),
        ({"task": "diarize", "roles": '[""]'}, "every role name must be a non-empty string"),
        ({"emotions": "true", "model": "nexara-ru"}, "emotions=true requires task=diarize"),
        ({"emotions": "true", "task": "diarize"}, "emotions=true requires model=nexara-ru; got model=whisper-1"),
        ({"emotions": "true", **DIARIZE_RU, "response_format": "srt"}, "emotions=true requires response_format json"),
        ({"emotions": "true", **DIARIZE_RU, "stream": "true"}, "stream=true cannot be combined"),
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_every_combination_the_sdk_refuses_is_a_400_saying_what_to_fix(inprocess, path, form, detail) -> None:
    response = call(inprocess, "POST", path, files=AUDIO, data=form)
    assert response.status_code == 400, response.text
    assert detail in response.json()["detail"]
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


def test_a_dictionary_goes_with_an_llm_prompt(inprocess) -> None:
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"dictionary": "medical", "prompt": "Sum up."})
    assert response.status_code == 200, response.text
    assert inprocess.pipeline.requests[-1].options.vocabulary.dictionary == "medical"


def test_a_prompt_gets_verbose_json_wrapped_with_the_llm_output(inprocess) -> None:
    body = call(inprocess, "POST", SYNC, files=AUDIO, data={"prompt": "Sum up."}).json()
    assert set(body) == {"transcription", "llm_output"} and body["llm_output"] == "A greeting."
    assert body["transcription"]["task"] == "transcribe" and body["transcription"]["segments"]
    assert "words" not in body["transcription"]  # verbose_json by segment
    request = inprocess.pipeline.requests[-1]
    assert request.options.prompt is None  # the LLM's instruction is not Whisper's initial prompt
    assert request.analysis.prompt == "Sum up." and request.analysis.json_schema is None
    assert request.analysis.timeout_s == 60.0  # the synchronous budget (analysis.sync_timeout_s)


def test_a_prompt_with_a_schema_gets_an_object(inprocess) -> None:
    form = {"prompt": "Sum up.", "json_schema": SCHEMA, "response_format": "verbose_json"}
    body = call(inprocess, "POST", SYNC, files=AUDIO, data=form).json()
    assert body["llm_output"] == {"summary": "a greeting"}
    assert inprocess.pipeline.requests[-1].analysis.json_schema == json.loads(SCHEMA)


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ("auto", ["caller", "agent"]),
        ('["client", "operator"]', ["client", "operator"]),
        ('{"client": "calls for help", "operator": "answers"}', ["client", "operator"]),
    ],
)
def test_roles_tag_segments_and_words_and_keep_the_mapping(inprocess, roles, expected) -> None:
    body = call(inprocess, "POST", SYNC, files=AUDIO, data={"task": "diarize", "roles": roles}).json()
    assert [segment["speaker"] for segment in body["segments"]] == expected
    assert [word["speaker"] for word in body["words"]] == expected
    assert body["roles"] == {"speaker_0": expected[0], "speaker_1": expected[1]}
    assert [speaker["speaker"] for speaker in body["speakers"]] == ["speaker_0", "speaker_1"]
    asked = inprocess.pipeline.requests[-1].analysis.roles
    assert asked == (roles if roles == "auto" else json.loads(roles))


def test_diarize_with_a_prompt_wraps_the_diarized_body(inprocess) -> None:
    form = {"task": "diarize", "prompt": "Who called?", "roles": "auto"}
    body = call(inprocess, "POST", SYNC, files=AUDIO, data=form).json()
    assert body["llm_output"] == "A greeting." and body["transcription"]["task"] == "diarize"
    assert body["transcription"]["roles"] == {"speaker_0": "caller", "speaker_1": "agent"}
    parsed = parse_result(body)  # how the nexara SDK reads it: an LLMResult around a verbose_json transcription
    assert isinstance(parsed, SDKLLMResult) and parsed.transcription.segments
    for raw, segment in zip(body["transcription"]["segments"], parsed.transcription.segments, strict=True):
        assert raw["speaker"] in {"caller", "agent"} and segment.tokens == [] and segment.end > segment.start


def test_emotions_on_the_judged_segments_only(inprocess) -> None:
    body = call(inprocess, "POST", SYNC, files=AUDIO, data={"emotions": "true", **DIARIZE_RU}).json()
    first, second = body["segments"]
    assert first["emotion"]["label"] == "positive" and first["emotion"]["confidence"] == 0.8
    assert sum(first["emotion"]["probs"].values()) == pytest.approx(1.0, abs=1e-3) and "emotion" not in second
    assert "roles" not in body


def test_a_plain_diarization_body_is_unchanged(inprocess) -> None:
    body = call(inprocess, "POST", SYNC, files=AUDIO, data={"task": "diarize"}).json()
    assert "roles" not in body and all("emotion" not in segment for segment in body["segments"])
    assert "analysis" not in body and inprocess.pipeline.requests[-1].analysis is None


@pytest.mark.parametrize(
    ("error", "status", "detail"),
    [
        (AnalysisTimeout("the analysis ran out of time"), 413, "submit the same request as a job"),
        (LLMBackendError("LLM server unreachable: 10.0.0.7:8001"), 502, "the LLM backend failed"),
        (LLMOutputInvalid("the LLM's answer is not valid against the JSON schema (x)"), 502, "also when asked again"),
    ],
)
def test_analysis_failures_are_413_and_502_with_a_plain_detail(inprocess, error, status, detail) -> None:
    inprocess.pipeline.analysis = error
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"prompt": "Sum up."})
    assert response.status_code == status and detail in response.json()["detail"]
    assert "10.0.0.7" not in response.text  # the backend's address stays in the log
    assert inprocess.ledger.usage_page(owner_of(KEY), None, 10) == []  # not billed
    assert inprocess.spooled() == []


def test_the_nexara_sdk_raises_its_typed_413_for_a_spent_synchronous_budget(inprocess) -> None:
    """The nexara SDK's own transport (its documented test injection point) over the in-process app: the 413
    of a spent budget is the SDK's SyncLLMTimeoutError, which tells its users to resubmit as a job."""
    inprocess.pipeline.analysis = AnalysisTimeout("the analysis ran out of time")
    transport = AsyncHttpxTransport(api_key=KEY, base_url="http://test/v1", max_retries=0, http_client=inprocess.client)
    sdk = nexara.AsyncNexara(api_key=KEY, base_url="http://test/v1", transport=transport)
    create = sdk.transcriptions.create(file=AUDIO["file"][1], prompt="Sum up.")
    with pytest.raises(nexara.SyncLLMTimeoutError, match="as a job"):
        inprocess.loop.run_until_complete(create)


def test_a_job_carries_the_same_result_and_its_failure_is_an_unbilled_error(inprocess) -> None:
    created = call(inprocess, "POST", ASYNC, files=AUDIO, data={"prompt": "Sum up.", "json_schema": SCHEMA})
    job = _wait(inprocess, created.json()["job_id"])
    assert job["status"] == "complete" and job["result"]["llm_output"] == {"summary": "a greeting"}
    assert job["result"]["transcription"]["task"] == "transcribe"
    assert inprocess.pipeline.requests[-1].analysis.timeout_s is None  # a job gets analysis.timeout_s
    inprocess.pipeline.analysis = LLMBackendError("boom")
    failed = _wait(inprocess, call(inprocess, "POST", ASYNC, files=AUDIO, data={"prompt": "Sum up."}).json()["job_id"])
    assert failed["status"] == "error" and "the LLM backend failed" in failed["error"] and failed["result"] is None
    assert [row.charge_id for row in inprocess.ledger.usage_page(owner_of(KEY), None, 10)] == [job["job_id"]]


def test_usage_items_carry_tokens_and_flags_and_cost_them(inprocess) -> None:
    inprocess.config.billing.llm_price_per_1k_tokens = 0.5
    inprocess.config.billing.emotions_rate_per_min = 0.6
    call(inprocess, "POST", SYNC, files=AUDIO, key=PRICED_KEY)
    call(inprocess, "POST", SYNC, files=AUDIO, key=PRICED_KEY, data={"roles": "auto", **DIARIZE_RU, "emotions": "1"})
    tagged, plain = call(inprocess, "GET", "/v1/billing/usage", key=PRICED_KEY).json()["items"]
    assert (plain["role_tagging"], plain["emotions"], plain["llm_input_tokens"]) == (False, False, None)
    assert (tagged["role_tagging"], tagged["emotions"]) == (True, True)
    assert (tagged["llm_input_tokens"], tagged["llm_output_tokens"]) == (120, 8)
    minutes = tagged["seconds"] / 60
    assert tagged["cost"] == pytest.approx(minutes * 0.6 + 128 / 1000 * 0.5 + minutes * 0.6, abs=1e-6)


def test_emotions_asked_and_none_returned_are_not_flagged(inprocess) -> None:
    inprocess.pipeline.analysis = Analysis(emotions=[None, None], llm_input_tokens=50, llm_output_tokens=4)
    call(inprocess, "POST", SYNC, files=AUDIO, data={"emotions": "true", **DIARIZE_RU})
    (item,) = call(inprocess, "GET", "/v1/billing/usage").json()["items"]
    assert item["emotions"] is False and item["llm_input_tokens"] == 50


def test_prompt_under_the_whisper_setting_is_whispers_initial_prompt(inprocess) -> None:
    inprocess.config.analysis.prompt_field = "whisper"
    body = call(inprocess, "POST", SYNC, files=AUDIO, data={"prompt": "Kubernetes, Ray."}).json()
    assert body == {"text": "Hello there."}  # OpenAI's answer, not wrapped
    request = inprocess.pipeline.requests[-1]
    assert request.options.prompt == "Kubernetes, Ray." and request.analysis is None
    refused = call(inprocess, "POST", SYNC, files=AUDIO, data={"prompt": "Sum up.", "json_schema": SCHEMA})
    assert refused.status_code == 400 and "analysis.prompt_field: whisper" in refused.json()["detail"]
    roles = call(inprocess, "POST", SYNC, files=AUDIO, data={"task": "diarize", "roles": "auto", "prompt": "Ray."})
    assert roles.json()["roles"] == {"speaker_0": "caller", "speaker_1": "agent"}
    assert inprocess.pipeline.requests[-1].options.prompt == "Ray."


def test_render_body_wraps_any_transcript_with_an_answer() -> None:
    analysis = Analysis(llm_output="", roles={"speaker_0": "host"})
    body = render_body(
        DIARIZED.model_copy(update={"analysis": analysis}), ResponseFormat.json, [TimestampGranularity.segment]
    )
    assert isinstance(body, dict)
    assert body["llm_output"] == "" and body["transcription"]["segments"][0]["speaker"] == "host"
    assert body["transcription"]["segments"][1]["speaker"] == "speaker_1"  # a speaker without a role keeps its label


def _wait(inprocess, job_id: str) -> dict:
    for _ in range(200):
        job = call(inprocess, "GET", f"{ASYNC}/{job_id}").json()
        if job["status"] != "in_progress":
            return job
        inprocess.loop.run_until_complete(asyncio.sleep(0.02))
    raise AssertionError(f"job {job_id} did not finish")


def test_the_openai_sdk_sends_prompt_as_whispers_under_the_whisper_setting(inprocess) -> None:
    inprocess.config.analysis.prompt_field = "whisper"
    sdk = openai.AsyncOpenAI(base_url="http://test/v1", api_key=KEY, http_client=inprocess.client, max_retries=0)
    create = sdk.audio.transcriptions.create(model="whisper-1", file=AUDIO["file"], prompt="Kubernetes, Ray.")
    assert inprocess.loop.run_until_complete(create).text == "Hello there."
    assert inprocess.pipeline.requests[-1].options.prompt == "Kubernetes, Ray."
