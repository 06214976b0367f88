"""The Deepgram protocol over fakes: its parameters, its rendering (parsed by the `deepgram-sdk`'s own types), its
errors and its live messages, with the SDK itself talking to the app in-process (no Ray, no model)."""

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from deepgram import DeepgramClient
from deepgram.core.api_error import ApiError
from deepgram.core.unchecked_base_model import construct_type
from deepgram.environment import DeepgramClientEnvironment
from deepgram.errors.bad_request_error import BadRequestError
from deepgram.listen.v1.socket_client import V1SocketClientResponse
from deepgram.listen.v1.types import ListenV1Metadata, ListenV1Results, ListenV1SpeechStarted, ListenV1UtteranceEnd
from deepgram.types.listen_v1response import ListenV1Response
from fastapi import HTTPException
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from deployments.billing.ledger import UsageLedger
from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job, JobRequest, owner_of
from deployments.live.events import (
    LiveEvent,
    LiveWord,
    SessionEnded,
    SpeechEnded,
    SpeechStarted,
    TranscriptEvent,
    TurnEnded,
)
from deployments.redaction import RedactionClass
from deployments.types import DiarizationOptions, TranscriptionOptions
from serve_app.common.auth import ApiKey
from serve_app.deepgram._live_events import DeepgramEvents
from serve_app.deepgram._live_params import live_options
from serve_app.deepgram._params import listen_options
from serve_app.deepgram.config import DEEPGRAM_MODELS
from serve_app.deepgram.listen import callback_delivery
from serve_app.deepgram.results import render_listen
from serve_app.http_app import CALLBACK_FORMATS
from tests import inprocess
from tests.inprocess import BROKE_KEY, DIARIZED, KEY, UPLOAD_LIMIT, call, live_app
from tests.test_job_tracker import TRANSCRIPT

HELLO = [LiveWord(text="Hello,", start=80, end=400), LiveWord(text="world.", start=480, end=880)]


class FakeLive(inprocess.FakeLive):
    """Each push is heard as "Hello, world." once; a commit ends the turn."""

    session_id, text = "dg-1", "Hello, world."

    def heard(self, frames: bytes) -> list[LiveEvent]:
        return [SpeechStarted(turn=0, start=80), TranscriptEvent(text=" Hello, world.", words=HELLO, turn=0),
                SpeechEnded(turn=0, end=880)]  # fmt: skip

    def committed(self) -> list[LiveEvent]:
        return [TurnEnded(turn=0, start=80, end=960, confidence=None, text="Hello, world.", words=HELLO)]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, FakeLive, UsageLedger]]:
    fake = FakeLive()
    with live_app(tmp_path, fake, [ApiKey(key=KEY), ApiKey(key=BROKE_KEY, balance_seconds=0)]) as (client, ledger):
        yield client, fake, ledger


def sdk(client: TestClient, key: str = KEY) -> DeepgramClient:
    environment = DeepgramClientEnvironment(
        base="http://testserver", production="ws://testserver", agent="ws://testserver", agent_rest="http://testserver"
    )
    # a timeout of our own: the SDK passes httpx's "client default" otherwise, which the TestClient (httpx2 when
    # installed: starlette 1.x prefers it, and openai brings it) refuses
    return DeepgramClient(api_key=key, environment=environment, httpx_client=client, timeout=60)


def options(**query: str):
    return listen_options(query.items(), DEEPGRAM_MODELS)


def test_parameters_map_to_the_pipelines_options() -> None:
    default = options()
    assert default.model == DEEPGRAM_MODELS[0] and default.language == "en" and not default.diarize
    assert options(language="fr-FR").transcription_options().language == "fr"
    assert options(detect_language="true").language is None
    assert options(language="multi").language is None
    assert options(diarize_model="latest").diarization_options() is not None
    assert options(profanity_filter="true").transcription_options().profanity_filter
    assert options(smart_format="true").punctuated and options(smart_format="true").with_paragraphs
    assert options(redact="false", multichannel="false", numerals="0").model == DEEPGRAM_MODELS[0]
    chosen = options(multichannel="true", diarize="true")  # each channel on its own, speakers within each
    assert chosen.transcription_options().multichannel and chosen.diarization_options() == DiarizationOptions(
        within_channels=True
    )
    assert options(tag="a", extra="k:v").extra == {"k": "v"}


@pytest.mark.parametrize(
    "query, named",
    [
        ({"keyterm": "a b c d e f g"}, "keyterm"),
        ({"keywords": "Acme:-2"}, "keywords"),
        ({"redact": "phi"}, "redact"),
        ({"redact": "passwords"}, "redact"),
        ({"redact": "pii", "language": "fr"}, "person_name"),
        ({"summarize": "v2"}, "summarize"),
        ({"callback_method": "put"}, "callback_method"),
        ({"model": "nova-9"}, "nova-9"),
        ({"language": "xx"}, "language"),
        ({"punctuate": "maybe"}, "punctuate"),
        ({"frobnicate": "true"}, "frobnicate"),
    ],
)
def test_what_cannot_be_honoured_is_a_400_naming_it(query: dict[str, str], named: str) -> None:
    with pytest.raises(HTTPException) as refused:
        options(**query)
    assert refused.value.status_code == 400 and named in str(refused.value.detail)


def test_redact_groups_are_read_as_entity_classes() -> None:
    assert options(redact="pci").redact == [RedactionClass.credit_card_number]
    assert options(redact="true").redact == options(redact="numbers").redact == [RedactionClass.numbers]
    both = options(redact="pci,ssn")
    assert both.redact == [RedactionClass.credit_card_number, RedactionClass.us_social_security_number]
    assert both.transcription_options().redaction.mode == "class"
    assert RedactionClass.person_name in options(redact="pii").redact and options(redact="false").redact == []
    assert options(redact="pci", language="fr").redact == [RedactionClass.credit_card_number]  # patterns: any language


def test_the_response_parses_as_the_sdks_typed_response() -> None:
    plain = render_listen(TRANSCRIPT, options(), "r-1", "2026-11-26T00:00:00.000Z", "ab" * 32, "tiny")
    assert plain["results"]["channels"][0]["alternatives"][0]["transcript"] == "hello there"
    parsed = construct_type(type_=ListenV1Response, object_=plain)
    assert isinstance(parsed, ListenV1Response) and parsed.metadata.request_id == "r-1"
    asked = options(punctuate="true", diarize="true", utterances="true", paragraphs="true", detect_language="true")
    body = render_listen(DIARIZED, asked, "r-2", "2026-11-26T00:00:00.000Z", None, "tiny")
    response = construct_type(type_=ListenV1Response, object_=body)
    channel = response.results.channels[0]
    alternative = channel.alternatives[0]
    assert alternative.transcript == "Hello there." and channel.detected_language == "en"
    assert [(w.word, w.speaker, w.punctuated_word) for w in alternative.words] == [
        ("hello", 0, "Hello"),
        ("there", 1, "there."),
    ]
    assert all(word.end >= word.start and word.speaker_confidence == 1.0 for word in alternative.words)
    assert [utterance.speaker for utterance in response.results.utterances] == [0, 1]
    assert [paragraph.speaker for paragraph in alternative.paragraphs.paragraphs] == [0, 1]
    assert alternative.paragraphs.transcript == "\nSpeaker 0: Hello\n\nSpeaker 1: there.\n"


def test_utterances_are_cut_at_pauses_of_utt_split() -> None:
    body = render_listen(TRANSCRIPT, options(utterances="true", utt_split="0.1"), "r", "t", None, "v")
    assert [u["transcript"] for u in body["results"]["utterances"]] == ["hello", "there"]
    body = render_listen(TRANSCRIPT, options(utterances="true", utt_split="0.5"), "r", "t", None, "v")
    assert [u["transcript"] for u in body["results"]["utterances"]] == ["hello there"]


def test_the_sdk_transcribes_a_file(app) -> None:
    client, _, _ = app
    deepgram = sdk(client)
    response = deepgram.listen.v1.media.transcribe_file(request=b"RIFF fake audio", model="nova-3", smart_format=True)
    assert isinstance(response, ListenV1Response)
    (alternative,) = response.results.channels[0].alternatives or []
    assert alternative.transcript == "Hello there."
    assert response.metadata.model_info[response.metadata.models[0]]["name"] == "nova-3"
    assert len(str(getattr(response.metadata, "sha256", ""))) == 64  # an extra field of the typed response


def test_errors_are_the_sdks_own(app) -> None:
    client, _, _ = app
    with pytest.raises(ApiError) as unauthorized:
        sdk(client, key="wrong").listen.v1.media.transcribe_file(request=b"audio", model="nova-3")
    assert unauthorized.value.status_code == 401 and unauthorized.value.body["err_code"] == "INVALID_AUTH"
    with pytest.raises(BadRequestError) as refused:
        sdk(client).listen.v1.media.transcribe_file(request=b"audio", model="nova-3", keywords="Acme:-5")
    assert refused.value.body["err_code"] == "Bad Request" and "keywords" in refused.value.body["err_msg"]
    with pytest.raises(ApiError) as broke:
        sdk(client, key=BROKE_KEY).listen.v1.media.transcribe_file(request=b"audio", model="nova-3")
    assert broke.value.status_code == 402 and broke.value.body["err_code"] == "ASR_PAYMENT_REQUIRED"
    empty = client.post("/v1/listen", content=b"", headers={"Authorization": f"Token {KEY}"})
    assert empty.status_code == 400 and set(empty.json()) == {"err_code", "err_msg", "request_id"}


def test_a_callback_job_is_delivered_in_deepgrams_shape() -> None:
    assert CALLBACK_FORMATS["deepgram"] is callback_delivery
    asked = options(punctuate="true", callback="http://127.0.0.1/hook")
    render = {"protocol": "deepgram", "options": asked.model_dump(), "sha256": None, "version": "tiny"}
    request = JobRequest(source_path="/x", options=TranscriptionOptions(), render=render, callback_url=asked.callback)
    job = Job(job_id="job-1", owner="o", created_at="2026-11-26T00:00:00+00:00", transcript=TRANSCRIPT, request=request)
    delivery = callback_delivery(job, CallbackState())
    assert not delivery.signed
    sent = construct_type(type_=ListenV1Response, object_=json.loads(delivery.body))
    assert sent.metadata.request_id == "job-1" and sent.results.channels[0].alternatives[0].transcript == "Hello there."
    failed = callback_delivery(job.model_copy(update={"transcript": None, "error": "not audio"}), CallbackState())
    assert json.loads(failed.body) == {"err_code": "Bad Request", "err_msg": "not audio", "request_id": "job-1"}


def live(query: str) -> Any:
    return live_options([tuple(pair.split("=")) for pair in query.split("&")], DEEPGRAM_MODELS)  # type: ignore[misc]


def test_live_redact_reaches_the_session_and_phi_is_refused() -> None:
    redaction = live("encoding=linear16&sample_rate=16000&redact=pci&redact=ssn").settings.redaction
    assert redaction is not None
    assert redaction.classes == [RedactionClass.credit_card_number, RedactionClass.us_social_security_number]
    assert live("encoding=linear16&sample_rate=16000&redact=false").settings.redaction is None
    with pytest.raises(HTTPException) as refused:
        live("encoding=linear16&sample_rate=16000&redact=phi")
    assert refused.value.status_code == 400 and "phi" in str(refused.value.detail)


def test_live_parameters() -> None:
    chosen = live("encoding=mulaw&sample_rate=8000&channels=2&multichannel=true&diarize=true&endpointing=300")
    settings = chosen.settings
    assert (settings.encoding, settings.sample_rate, settings.channels_transcribed) == ("pcm_mulaw", 8000, 2)
    assert settings.diarize and settings.turn_detection == "vad" and settings.silence_ms == 300
    assert live("encoding=linear16&sample_rate=16000&endpointing=false").settings.turn_detection == "manual"
    for refused in (
        "encoding=opus&sample_rate=16000",
        "sample_rate=16000",
        "encoding=linear16&sample_rate=16000&keywords=a:-1",
    ):
        with pytest.raises(HTTPException) as error:
            live(refused)
        assert error.value.status_code == 400


def parsed(message: dict[str, Any]) -> Any:
    return construct_type(type_=V1SocketClientResponse, object_=message)  # type: ignore[arg-type]  # a Union


def test_live_events_are_deepgrams_messages() -> None:
    events = DeepgramEvents(
        live("encoding=linear16&sample_rate=16000&vad_events=true&utterance_end_ms=1000&punctuate=true"), "r", "v"
    )
    started = parsed(*events.translate(SpeechStarted(turn=0, start=80)))
    assert isinstance(started, ListenV1SpeechStarted) and started.timestamp == 0.08
    (results,) = events.translate(TranscriptEvent(text=" Hello, world.", words=HELLO, turn=0))
    typed = parsed(results)
    assert isinstance(typed, ListenV1Results) and typed.is_final and not typed.speech_final
    alternative = typed.channel.alternatives[0]
    assert alternative.transcript == "Hello, world." and [w.word for w in alternative.words] == ["hello", "world"]
    assert events.tick(1500) == []  # still speaking
    events.translate(SpeechEnded(turn=0, end=880))
    assert events.tick(1500) == []  # 0.62 s after the last word
    (end,) = events.tick(1900)
    assert isinstance(parsed(end), ListenV1UtteranceEnd) and end["last_word_end"] == 0.88
    assert events.tick(3000) == []  # once
    (turn,) = events.translate(TurnEnded(turn=0, start=80, end=1100, confidence=None, text="", words=[]))
    assert turn["speech_final"] and turn["channel"]["alternatives"][0]["words"] == []
    (metadata,) = events.translate(
        SessionEnded(audio_duration_ms=2000, channels_transcribed=1, billed_ms=2000, text="")
    )
    assert isinstance(parsed(metadata), ListenV1Metadata) and metadata["duration"] == 2.0


def test_a_finalize_answers_with_the_words_it_made_final() -> None:
    events = DeepgramEvents(live("encoding=linear16&sample_rate=16000&endpointing=false"), "r", "v")
    events.finalize()
    assert events.translate(TranscriptEvent(text=" Hello, world.", words=HELLO, turn=0)) == []
    (answer,) = events.translate(TurnEnded(turn=0, start=80, end=960, confidence=None, text="", words=HELLO))
    assert answer["from_finalize"] and answer["channel"]["alternatives"][0]["transcript"] == "hello world"


def test_the_sdk_streams_live_and_finalize_and_close_stream_are_honoured(app) -> None:
    client, fake, _ = app
    headers = {"Authorization": f"Token {KEY}"}
    query = "model=nova-3&encoding=linear16&sample_rate=16000&punctuate=true&endpointing=false"
    with client.websocket_connect(f"/v1/listen?{query}", headers=headers) as socket:
        socket.send_bytes(b"\0" * 32000)
        first = parsed(socket.receive_json())
        assert isinstance(first, ListenV1Results) and first.channel.alternatives[0].transcript == "Hello, world."
        socket.send_text(json.dumps({"type": "KeepAlive"}))
        socket.send_text(json.dumps({"type": "Finalize"}))
        finalized = parsed(socket.receive_json())
        assert isinstance(finalized, ListenV1Results) and finalized.from_finalize
        socket.send_text(json.dumps({"type": "CloseStream"}))
        closing = parsed(socket.receive_json())
        assert isinstance(closing, ListenV1Metadata) and closing.duration == 1.0
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()
        assert closed.value.code == 1000
    assert fake.commits == 1 and fake.settings[0].turn_detection == "manual"


def test_a_refused_socket_is_an_http_answer_in_deepgrams_shape(app) -> None:
    client, _, _ = app
    for key, query, status in [
        ("wrong", "encoding=linear16&sample_rate=16000", 401),
        (KEY, "encoding=opus&sample_rate=48000", 400),
        (BROKE_KEY, "encoding=linear16&sample_rate=16000", 402),
    ]:
        with (
            pytest.raises(WebSocketDenialResponse) as refused,
            client.websocket_connect(f"/v1/listen?{query}", headers={"Authorization": f"Token {key}"}),
        ):
            pass
        assert refused.value.status_code == status and set(refused.value.json()) == {
            "err_code",
            "err_msg",
            "request_id",
        }


def test_the_key_may_come_as_the_token_subprotocol(app) -> None:
    client, _, _ = app
    with client.websocket_connect(
        "/v1/listen?encoding=linear16&sample_rate=16000", subprotocols=["token", KEY]
    ) as socket:
        assert socket.accepted_subprotocol == "token"
        socket.send_text(json.dumps({"type": "CloseStream"}))
        assert parsed(socket.receive_json()).type == "Metadata"


def test_a_callback_request_is_a_job_answered_with_its_id(inprocess) -> None:
    hook = "http://127.0.0.1:9/hook"  # loopback: the in-process service's callbacks.allowed_networks
    accepted = call(inprocess, "POST", "/v1/listen", params={"callback": hook, "punctuate": "true"}, content=b"audio")
    assert accepted.status_code == 200 and set(accepted.json()) == {"request_id"}
    job_id = accepted.json()["request_id"]
    assert inprocess.services is not None and inprocess.services.jobs is not None
    for _ in range(200):
        job = inprocess.services.jobs.get(job_id, owner_of(KEY))
        if job is not None and job.transcript is not None:
            break
        inprocess.loop.run_until_complete(asyncio.sleep(0.01))
    assert job is not None and job.request.render["protocol"] == "deepgram" and job.request.callback_url == hook
    delivered = json.loads(callback_delivery(job, CallbackState()).body)
    assert delivered["metadata"]["request_id"] == job_id and delivered["metadata"]["sha256"]
    assert delivered["results"]["channels"][0]["alternatives"][0]["words"][0]["punctuated_word"] == "Hello"


@pytest.mark.parametrize("hook", ["http://10.1.2.3/hook", "http://169.254.169.254/", "no url"])
def test_a_non_public_callback_is_a_400_and_nothing_is_kept(inprocess, hook: str) -> None:
    refused = call(inprocess, "POST", "/v1/listen", params={"callback": hook}, content=b"audio")
    assert refused.status_code == 400 and refused.json()["err_code"] == "Bad Request"
    assert inprocess.spooled() == []


def test_a_body_over_the_limit_is_a_413_and_nothing_is_kept(inprocess) -> None:
    too_large = call(inprocess, "POST", "/v1/listen", content=b"\0" * (UPLOAD_LIMIT + 1))
    assert too_large.status_code == 413 and too_large.json()["err_code"] == "PAYLOAD_TOO_LARGE"

    async def pieces() -> AsyncIterator[bytes]:  # no Content-Length: the limit holds while reading
        yield b"\0" * UPLOAD_LIMIT
        yield b"\0"

    streamed = call(inprocess, "POST", "/v1/listen", content=pieces())
    assert streamed.status_code == 413
    bad_json = call(inprocess, "POST", "/v1/listen", content=b"{", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and "url" in bad_json.json()["err_msg"]
    assert inprocess.spooled() == []
