"""Tier 1, in-process: what the nexara and openai SDKs send and expect, rule by rule: fields this service
refuses rather than ignores, model ids and aliases, `language=auto`, sentences, the `/api/v1` prefix,
billing balance and usage paging, and `stream=true` as server-sent events. The SDKs themselves drive the
running service in test_sdk_service.py."""

import json

import pytest

from tests.inprocess import BROKE_KEY, KEY, PRICED_KEY, call

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}


@pytest.mark.parametrize(
    ("field", "value"),
    [("vocabulary_boost", "high"), ("colour", "red")],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_a_field_this_service_does_not_implement_is_400_naming_it(inprocess, path, field, value) -> None:
    response = call(inprocess, "POST", path, files=AUDIO, data={field: value})
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"not supported by this service: '{field}'")
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


def test_an_unimplemented_field_that_asks_for_nothing_is_let_through(inprocess) -> None:
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"colour": "none"})
    assert response.status_code == 200 and response.json() == {"text": "Hello there."}


def test_diarization_fields_without_task_diarize_are_refused(inprocess) -> None:
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"num_speakers": "2"})
    assert response.status_code == 422 and "num_speakers requires task=diarize" in response.text
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"min_speakers": "2"})
    assert response.status_code == 422 and "min_speakers requires task=diarize" in response.text


@pytest.mark.parametrize(
    ("fields", "accepted"),
    [({"min_speakers": "2", "max_speakers": "4"}, True), ({"min_speakers": "3", "max_speakers": "2"}, False),
     ({"max_speakers": "0"}, False), ({"min_speakers": "33"}, False)],
)  # fmt: skip
def test_speaker_bounds_are_checked_like_num_speakers(inprocess, fields: dict, accepted: bool) -> None:
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"task": "diarize", **fields})
    assert (response.status_code != 422) == accepted, response.text


def test_models_lists_the_configured_ids_and_model_accepts_them_only(inprocess) -> None:
    listed = call(inprocess, "GET", "/v1/models").json()["data"]
    assert [card["id"] for card in listed] == ["whisper-1", "whisper-base", "nexara-ru"]
    assert call(inprocess, "POST", SYNC, files=AUDIO, data={"model": "whisper-base"}).status_code == 200
    refused = call(inprocess, "POST", ASYNC, files=AUDIO, data={"model": "whisper-2"})
    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "unknown model 'whisper-2': this service offers whisper-1, whisper-base, nexara-ru (GET /v1/models)"
    )
    assert inprocess.spooled() == []


@pytest.mark.parametrize("language", ["auto", "automatic", "AUTO", ""])
def test_language_auto_means_detect(inprocess, language) -> None:
    assert call(inprocess, "POST", SYNC, files=AUDIO, data={"language": language}).status_code == 200
    assert inprocess.pipeline.requests[-1].options.language is None


def test_sentence_granularity_gives_sentences_and_words_instead_of_segments(inprocess) -> None:
    form = {"response_format": "verbose_json", "timestamp_granularities[]": "sentence"}
    body = call(inprocess, "POST", SYNC, files=AUDIO, data=form).json()
    assert "segments" not in body
    assert body["sentences"] == [{"start": 0.0, "end": 2.5, "text": "Hello there."}]
    assert [word["word"] for word in body["words"]] == ["Hello", "there."]
    assert inprocess.pipeline.requests[-1].options.word_timestamps  # sentences are timed by words
    refused = call(inprocess, "POST", SYNC, files=AUDIO, data={**form, "response_format": "json"})
    assert refused.status_code == 422 and "sentence requires response_format=verbose_json" in refused.text


def test_profanity_filter_reaches_the_pipeline(inprocess) -> None:
    call(inprocess, "POST", SYNC, files=AUDIO, data={"profanity_filter": "true"})
    call(inprocess, "POST", SYNC, files=AUDIO, data={"profanity_filter": "false"})
    assert [request.options.profanity_filter for request in inprocess.pipeline.requests] == [True, False]


def test_the_api_v1_prefix_serves_the_same_routes(inprocess) -> None:
    assert call(inprocess, "GET", "/api/v1/models").json() == call(inprocess, "GET", "/v1/models").json()
    assert call(inprocess, "POST", "/api" + SYNC, files=AUDIO).json() == {"text": "Hello there."}
    assert call(inprocess, "GET", "/api/v1/models", key="wrong").status_code == 401


def test_balance_and_usage_are_the_keys_own_in_its_currency(inprocess) -> None:
    assert call(inprocess, "GET", "/v1/billing/balance", key=PRICED_KEY).json() == {
        "balance": 1.0,
        "rate_per_min": 0.6,
        "currency": "RUB",
        "unlimited": False,
    }
    for _ in range(3):  # 2.5 s each at 0.6 a minute: 0.025 each
        assert call(inprocess, "POST", SYNC, key=PRICED_KEY, files=AUDIO, data={"model": "whisper-base"}).is_success
    call(inprocess, "POST", SYNC, key=KEY, files=AUDIO)  # another key's charge
    balance = call(inprocess, "GET", "/v1/billing/balance", key=PRICED_KEY).json()
    assert balance["balance"] == pytest.approx(1.0 - 3 * 0.025)

    first = call(inprocess, "GET", "/v1/billing/usage", key=PRICED_KEY, params={"limit": 2}).json()
    assert first["has_more"] and first["currency"] == "RUB" and len(first["items"]) == 2
    item = first["items"][0]
    assert item["seconds"] == 2.5 and item["cost"] == pytest.approx(0.025) and item["model"] == "whisper-base"
    assert item["bytes"] == len(AUDIO["file"][1]) and item["language"] == "en" and item["task"] == "transcribe"
    assert item["api_key"] == {"id": 7, "name": "Key #7", "deleted": False}
    rest = call(inprocess, "GET", "/v1/billing/usage", key=PRICED_KEY, params={"cursor": first["next_cursor"]})
    assert len(rest.json()["items"]) == 1 and not rest.json()["has_more"] and rest.json()["next_cursor"] is None
    request_ids = [item["request_id"] for item in first["items"] + rest.json()["items"]]
    assert len(set(request_ids)) == 3  # newest first, no row twice, none of the other key's
    assert call(inprocess, "GET", "/v1/billing/usage", params={"limit": 101}).status_code == 422


def test_an_unlimited_key_shows_what_it_spent_below_zero(inprocess) -> None:
    call(inprocess, "POST", SYNC, files=AUDIO)
    balance = call(inprocess, "GET", "/v1/billing/balance").json()
    assert balance["unlimited"] and balance["currency"] == "EUR"
    assert balance["balance"] == pytest.approx(-2.5 / 60 * 0.006)
    assert call(inprocess, "GET", "/v1/billing/balance", key=BROKE_KEY).json()["balance"] == 0.0


def _events(text: str) -> list[dict]:
    return [json.loads(line.removeprefix("data: ")) for line in text.splitlines() if line.startswith("data: ")]


def test_stream_true_answers_text_deltas_then_done(inprocess) -> None:
    response = call(inprocess, "POST", SYNC, files=AUDIO, data={"stream": "true"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = _events(response.text)
    assert [event["type"] for event in events] == ["transcript.text.delta", "transcript.text.done"]
    assert events[0]["delta"] == "Hello there." == events[-1]["text"]
    assert inprocess.pipeline.requests[-1].stream_text and inprocess.spooled() == []
    with inprocess.ledger.engine.connect() as connection:
        (charged,) = connection.exec_driver_sql("SELECT audio_seconds FROM charges").all()
    assert tuple(charged) == (2.5,)


def test_stream_refusals(inprocess) -> None:
    not_audio = call(inprocess, "POST", SYNC, files={"file": ("a.mp3", b"not audio")}, data={"stream": "true"})
    assert not_audio.status_code == 400 and not_audio.json()["detail"].startswith("audio processing failed")
    verbose = call(inprocess, "POST", SYNC, files=AUDIO, data={"stream": "true", "response_format": "srt"})
    assert verbose.status_code == 422 and "use response_format json or text" in verbose.text
    job = call(inprocess, "POST", ASYNC, files=AUDIO, data={"stream": "true"})
    assert job.status_code == 400 and "stream=true is for POST /v1/audio/transcriptions" in job.json()["detail"]
    assert inprocess.spooled() == []
