"""The other protocols' vocabulary fields (issue 48) over fakes: each protocol's fields become the one
`Vocabulary` the pipeline or the LiveTranscriber is asked with, and a limit broken is a refusal in the
protocol's own error shape naming the field (no Ray, no model)."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepgram.errors.bad_request_error import BadRequestError
from deepgram.listen.v1.types import ListenV1ConfigureFailure
from fastapi import HTTPException
from starlette.datastructures import QueryParams
from starlette.testclient import TestClient

from deployments.billing.ledger import UsageLedger
from deployments.vocabulary import MAX_TERMS, Spelling, Vocabulary
from serve_app.common.auth import ApiKey
from serve_app.common.vocabulary import VocabularyRefused, spelling_from, vocabulary_from
from serve_app.deepgram._params import listen_options
from serve_app.deepgram.config import DEEPGRAM_MODELS
from serve_app.live.schemas import LiveSessionQuery
from serve_app.realtime._config import TranscriptionConfig
from tests import test_deepgram, test_live_edge, test_openai_realtime
from tests.fakes import Remote
from tests.inprocess import KEY, live_app
from tests.test_assemblyai_http import aai_call, finished, upload

TOO_MANY = [f"term{i}" for i in range(MAX_TERMS + 1)]


def test_fields_become_one_vocabulary_in_priority_order() -> None:
    vocabulary = vocabulary_from({"keyterm": ["Acme Cloud", "Zyrtec"], "keywords": ["Zyrtec", "kubectl"]})
    assert vocabulary == Vocabulary(terms=("Acme Cloud", "Zyrtec", "kubectl"))
    assert vocabulary_from({"keyterm": [], "keywords": []}) is None
    assert vocabulary_from({"hotwords": []}, dictionary="medical") == Vocabulary(dictionary="medical")


@pytest.mark.parametrize(
    ("terms", "named"),
    [
        ({"keyterm": TOO_MANY}, "keyterm: at most 200 terms; got 201"),
        ({"keyterm": TOO_MANY[:150], "keywords": TOO_MANY[:60]}, "keyterm and keywords: at most 200 terms in all"),
        ({"word_boost": ["one two three four five six seven"]}, "word_boost: term 'one two three"),
        ({"hotwords": ["x" * 65]}, "hotwords: term"),
        ({"hotwords": [" "]}, "hotwords: a term is empty"),
        ({"keyterm": ["Acme", " , "]}, "keyterm: term ',' has no letter or digit"),
    ],
)
def test_a_limit_broken_names_the_field(terms: dict[str, list[str]], named: str) -> None:
    with pytest.raises(VocabularyRefused, match=named):
        vocabulary_from(terms)


def test_spellings() -> None:
    assert spelling_from("custom_spelling", ["sequel", " s q l "], "SQL") == Spelling(
        heard=("sequel", "s q l"), written="SQL"
    )
    for heard, written in (([], "SQL"), (["sequel"], " "), (["x" * 65], "SQL")):
        with pytest.raises(VocabularyRefused, match="custom_spelling"):
            spelling_from("custom_spelling", heard, written)
    with pytest.raises(VocabularyRefused, match="custom_spelling: at most 200 spellings"):
        vocabulary_from({}, spellings=[Spelling(heard=("a",), written="b")] * 201, spellings_field="custom_spelling")


# ---- Deepgram ----


def test_deepgram_keyterm_and_keywords() -> None:
    query = [("keyterm", "Acme Cloud"), ("keyterm", "kubectl"), ("keywords", "Zyrtec:2"), ("keywords", "snuffleupagus")]
    options = listen_options(query, DEEPGRAM_MODELS)
    assert options.transcription_options().vocabulary == Vocabulary(
        terms=("Acme Cloud", "kubectl", "Zyrtec", "snuffleupagus")
    )
    assert test_deepgram.options(keyterm="").vocabulary is None
    live = test_deepgram.live("encoding=linear16&sample_rate=16000&keyterm=Acme&keywords=Zyrtec:1.5")
    assert live.settings.vocabulary == Vocabulary(terms=("Acme", "Zyrtec"))


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("keywords=Zyrtec:-3", "keywords: 'Zyrtec' has a negative intensifier"),
        ("keywords=Zyrtec:lots", "keywords: the intensifier of 'Zyrtec:lots' must be a number"),
        ("keywords=Zyrtec:nan", "keywords: the intensifier of 'Zyrtec:nan' must be a number"),
        ("keyterm=a b c d e f g", "keyterm: term"),
    ],
)
def test_deepgram_refusals_name_the_field(value: str, named: str) -> None:
    name, _, given = value.partition("=")
    with pytest.raises(HTTPException) as refused:
        test_deepgram.options(**{name: given})
    assert refused.value.status_code == 400 and named in str(refused.value.detail)
    with pytest.raises(HTTPException) as live_refused:
        test_deepgram.live(f"encoding=linear16&sample_rate=16000&{value}")
    assert named in str(live_refused.value.detail)


@pytest.fixture
def deepgram(tmp_path: Path) -> Iterator[tuple[TestClient, test_deepgram.FakeLive, UsageLedger]]:
    fake = test_deepgram.FakeLive()
    with live_app(tmp_path, fake, [ApiKey(key=KEY)]) as (client, ledger):
        yield client, fake, ledger


def test_deepgram_sdk_refusal_is_deepgrams_shape(deepgram) -> None:
    client, _, _ = deepgram
    with pytest.raises(BadRequestError) as refused:
        test_deepgram.sdk(client).listen.v1.media.transcribe_file(request=b"audio", model="nova-3", keyterm=TOO_MANY)
    assert set(refused.value.body) == {"err_code", "err_msg", "request_id"}
    assert refused.value.body["err_msg"] == "keyterm: at most 200 terms; got 201"


def test_deepgram_live_keyterms_reach_the_session_and_configure_is_refused_in_deepgrams_shape(deepgram) -> None:
    client, fake, _ = deepgram
    query = "encoding=linear16&sample_rate=16000&keyterm=Acme%20Cloud&keyterm=kubectl"
    with client.websocket_connect(f"/v1/listen?{query}", headers={"Authorization": f"Token {KEY}"}) as socket:
        socket.send_text(json.dumps({"type": "Configure", "keyterms": ["Zyrtec"]}))
        refused = test_deepgram.parsed(socket.receive_json())
        assert isinstance(refused, ListenV1ConfigureFailure) and refused.code == "CONFIGURE_KEYTERMS_NOT_SUPPORTED"
        socket.send_text(json.dumps({"type": "CloseStream"}))  # the stream went on
        assert test_deepgram.parsed(socket.receive_json()).type == "Metadata"
    assert fake.settings[0].vocabulary == Vocabulary(terms=("Acme Cloud", "kubectl"))


# ---- AssemblyAI ----


def test_assemblyai_fields_reach_the_pipeline_and_are_echoed(inprocess) -> None:
    fields: dict[str, object] = {
        "keyterms_prompt": ["Acme Cloud"],
        "word_boost": ["kubectl", "Zyrtec"],
        "boost_param": "high",
        "custom_spelling": [{"from": ["sequel", "seek well"], "to": "SQL"}],
    }
    created = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": upload(inprocess), **fields}).json()
    done = finished(inprocess, created["id"])
    assert inprocess.pipeline.requests[-1].options.vocabulary == Vocabulary(
        terms=("Acme Cloud", "kubectl", "Zyrtec"), spellings=(Spelling(heard=("sequel", "seek well"), written="SQL"),)
    )
    assert {name: done[name] for name in fields} == fields


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"word_boost": TOO_MANY}, "word_boost: at most 200 terms; got 201"),
        ({"keyterms_prompt": TOO_MANY[:100], "word_boost": TOO_MANY[:101]}, "keyterms_prompt and word_boost: at most"),
        ({"custom_spelling": [{"from": ["a"], "to": "x" * 65}]}, "custom_spelling: a spelling's words are at most"),
        ({"custom_spelling": [{"to": "SQL"}]}, "custom_spelling"),
        ({"boost_param": "maximum"}, "boost_param"),
    ],
)
def test_assemblyai_refusals_name_the_field(inprocess, fields: dict, named: str) -> None:
    answer = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": upload(inprocess), **fields})
    assert answer.status_code == 400 and set(answer.json()) == {"error"} and named in answer.json()["error"]


# ---- nexara live ----


def test_nexara_live_hotwords_repeated_or_comma_separated() -> None:
    query = LiveSessionQuery.from_query(
        QueryParams("hotwords=Acme%20Cloud,kubectl&hotwords[]=Zyrtec&dictionary=medical")
    )
    assert query.settings().vocabulary == Vocabulary(terms=("Acme Cloud", "kubectl", "Zyrtec"), dictionary="medical")
    assert LiveSessionQuery.from_query(QueryParams("")).settings().vocabulary is None
    assert LiveSessionQuery.from_query(QueryParams("dictionary=none")).settings().vocabulary is None  # as REST's


def test_nexara_live_hotwords_reach_the_session_and_a_breach_is_invalid_config(live) -> None:
    client, fake, _ = live
    opened: list = []

    def open_session(settings: object) -> str:
        opened.append(settings)
        return fake._open(settings)

    fake.open = Remote(open_session)
    received, code = test_live_edge.session(client, [b""], query="?hotwords=Acme&hotwords=kubectl")
    assert code == 1000 and opened[0].vocabulary == Vocabulary(terms=("Acme", "kubectl"))
    many = "&".join(f"hotwords={term}" for term in TOO_MANY)
    received, code = test_live_edge.session(client, [], query=f"?{many}")
    assert (received[0]["code"], code) == ("invalid_config", 4000)
    assert received[0]["message"].startswith("hotwords: ") and "at most 200 terms" in received[0]["message"]
    received, code = test_live_edge.session(client, [], query="?dictionary=legal")
    assert (received[0]["code"], code) == ("invalid_config", 4000) and received[0]["message"].startswith("dictionary: ")


live = test_live_edge.live


# ---- OpenAI realtime ----


def test_realtime_hotwords_beside_openais_fields() -> None:
    session = {
        "input_audio_transcription": {"model": "whisper-1", "prompt": "A talk.", "hotwords": ["Acme", "kubectl"]}
    }
    config = TranscriptionConfig().updated(session, beta=True)
    assert config.settings().vocabulary == Vocabulary(terms=("Acme", "kubectl"))
    none_asked = {"input_audio_transcription": {"model": "whisper-1", "dictionary": "None"}}
    assert TranscriptionConfig().updated(none_asked, beta=True).settings().vocabulary is None  # as REST's
    assert config.transcription.prompt == "A talk."  # OpenAI's prompt is left as it was
    shown = config.beta_session("s")["input_audio_transcription"]
    assert shown["hotwords"] == ["Acme", "kubectl"] and "dictionary" not in shown
    ga = {
        "type": "transcription",
        "audio": {"input": {"transcription": {"hotwords": "Acme,kubectl", "dictionary": "medical"}}},
    }
    assert TranscriptionConfig().updated(ga, beta=False).settings().vocabulary == Vocabulary(
        terms=("Acme", "kubectl"), dictionary="medical"
    )
    assert "hotwords" not in TranscriptionConfig().ga_session("s")["audio"]["input"]["transcription"]


def test_realtime_a_breach_is_an_error_event_naming_the_field(realtime) -> None:
    client, _, _ = realtime
    update = {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": {"transcription": {"hotwords": TOO_MANY}}}},
    }
    received = test_openai_realtime.exchange(client, [json.dumps(update)], 1)
    error = received[1]
    assert error["type"] == "error" and error["error"]["param"] == "transcription.hotwords"
    assert "at most 200 terms" in error["error"]["message"]
    good = {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": {"transcription": {"hotwords": ["Acme"]}}}},
    }
    received = test_openai_realtime.exchange(client, [json.dumps(good)], 1)
    assert received[1]["session"]["audio"]["input"]["transcription"]["hotwords"] == ["Acme"]
    legal = {"type": "transcription_session.update", "session": {"input_audio_transcription": {"dictionary": "legal"}}}
    error = test_openai_realtime.exchange(client, [json.dumps(legal)], 1)[1]
    assert error["type"] == "error" and error["error"]["param"] == "transcription.dictionary"
    medical = {
        "type": "transcription_session.update",
        "session": {"input_audio_transcription": {"dictionary": "medical"}},
    }
    assert test_openai_realtime.exchange(client, [json.dumps(medical)], 1)[1]["type"] == "transcription_session.updated"


realtime = test_openai_realtime.realtime
