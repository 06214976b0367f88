"""Deepgram's pre-recorded API through the running service with the `deepgram-sdk`, unchanged but for its
environment's addresses: a file, a URL, a diarized call with utterances and paragraphs, a callback, and
errors as the SDK's own, each request charged once."""

import json
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from deepgram import DeepgramClient
from deepgram.core.api_error import ApiError
from deepgram.environment import DeepgramClientEnvironment
from deepgram.errors.bad_request_error import BadRequestError
from deepgram.types.listen_v1accepted_response import ListenV1AcceptedResponse
from deepgram.types.listen_v1response import ListenV1Response
from websockets.exceptions import InvalidStatus

from devkit.callback_receiver import callback_receiver
from devkit.charges import charges_of
from devkit.media import encode
from tests.conftest import API_KEYS, Service

KEY = API_KEYS[1]


def deepgram_client(service: Service, key: str = KEY) -> DeepgramClient:
    websocket = service.base_url.replace("http", "ws", 1)
    environment = DeepgramClientEnvironment(
        base=service.base_url, production=websocket, agent=websocket, agent_rest=service.base_url
    )
    return DeepgramClient(api_key=key, environment=environment, timeout=300)


def charges(service: Service) -> dict[str, float]:
    return charges_of({"state_dir": str(service.state_dir)}, KEY)


def words_of(response: ListenV1Response) -> list:
    (alternative,) = response.results.channels[0].alternatives or []
    return list(alternative.words or [])


def test_a_file_is_transcribed_with_timed_punctuated_words_and_charged_once(service: Service, jfk_flac: Path) -> None:
    before = charges(service)
    response = deepgram_client(service).listen.v1.media.transcribe_file(
        request=jfk_flac.read_bytes(), model="nova-3", punctuate=True
    )
    assert isinstance(response, ListenV1Response)
    (alternative,) = response.results.channels[0].alternatives or []
    assert "ask not what your country can do for you" in (alternative.transcript or "").lower().replace(",", "")
    words = words_of(response)
    assert words and all(w.end >= w.start and w.punctuated_word for w in words)
    assert [w.word for w in words][:3] == ["and", "so", "my"]
    assert response.metadata.duration == pytest.approx(11.0, abs=0.1)
    after = charges(service)
    assert set(after) - set(before) == {response.metadata.request_id}
    assert after[response.metadata.request_id] == pytest.approx(response.metadata.duration, abs=0.05)


def test_a_url_is_fetched_and_smart_formatted_into_paragraphs(service: Service, media_url: str) -> None:
    response = deepgram_client(service).listen.v1.media.transcribe_url(
        url=f"{media_url}/speech.mp3", model="nova-2", smart_format=True
    )
    assert isinstance(response, ListenV1Response)
    (alternative,) = response.results.channels[0].alternatives or []
    assert "know you were there" in (alternative.transcript or "").lower()
    assert alternative.paragraphs is not None and alternative.paragraphs.paragraphs
    assert sum(p.num_words or 0 for p in alternative.paragraphs.paragraphs) == len(alternative.words or [])


def test_the_call_diarized_has_two_speakers_utterances_and_paragraphs(
    service: Service, call_samples: np.ndarray
) -> None:
    response = deepgram_client(service).listen.v1.media.transcribe_file(
        request=encode(call_samples, "wav"), model="nova-3", diarize=True, utterances=True, paragraphs=True,
        punctuate=True,
    )  # fmt: skip
    assert isinstance(response, ListenV1Response)
    words = words_of(response)
    assert words and all(w.speaker is not None and w.speaker_confidence is not None for w in words)
    assert len({w.speaker for w in words}) >= 2
    utterances = response.results.utterances or []
    assert len({u.speaker for u in utterances}) >= 2
    assert sum(len(u.words or []) for u in utterances) == len(words)
    assert all(u.start <= u.end and u.transcript for u in utterances)  # type: ignore[operator]
    (alternative,) = response.results.channels[0].alternatives or []
    paragraphs = (alternative.paragraphs.paragraphs if alternative.paragraphs else None) or []
    assert len(paragraphs) >= 2 and all(p.sentences and p.speaker is not None for p in paragraphs)
    assert "Speaker 1:" in (alternative.paragraphs.transcript or "")  # type: ignore[union-attr]


def test_a_callback_gets_the_response_and_the_request_is_charged_once(service: Service, speech_wav: bytes) -> None:
    with callback_receiver() as receiver:
        accepted = deepgram_client(service).listen.v1.media.transcribe_file(
            request=speech_wav, model="nova-3", callback=receiver.url, punctuate=True
        )
        assert isinstance(accepted, ListenV1AcceptedResponse) and not isinstance(accepted, ListenV1Response)
        (received,) = receiver.wait_for(1, timeout_s=240)
    assert received.path == "/hook" and received.headers["Content-Type"] == "application/json"
    body = json.loads(received.body)
    sent = ListenV1Response.model_validate(body)
    assert sent.metadata.request_id == accepted.request_id
    assert "know you were there" in body["results"]["channels"][0]["alternatives"][0]["transcript"].lower()
    assert charges(service)[accepted.request_id] == pytest.approx(sent.metadata.duration, abs=0.05)


def test_errors_are_the_sdks_own_in_deepgrams_shape(service: Service, greeting: bytes) -> None:
    with pytest.raises(ApiError) as unauthorized:
        deepgram_client(service, key="not-a-key").listen.v1.media.transcribe_file(request=greeting, model="nova-3")
    assert unauthorized.value.status_code == 401 and unauthorized.value.body["err_code"] == "INVALID_AUTH"
    for name, value in (("keywords", "Acme:-2"), ("summarize", "v2"), ("model", "nova-9")):
        with pytest.raises(BadRequestError) as bad:
            deepgram_client(service).listen.v1.media.transcribe_file(request=greeting, **{name: value})
        assert set(bad.value.body) == {"err_code", "err_msg", "request_id"}
        assert bad.value.body["err_code"] == "Bad Request" and name in bad.value.body["err_msg"]
    with pytest.raises(BadRequestError) as undecodable:
        deepgram_client(service).listen.v1.media.transcribe_file(request=b"this is not audio" * 64, model="nova-3")
    assert undecodable.value.body["err_code"] == "Bad Request"
    # The SDK turns a refused handshake into ApiError only for the websockets exception of before 14
    # (`deepgram/core/websocket_compat.py`); with the websockets installed here the 401 arrives as InvalidStatus.
    connecting = deepgram_client(service, "not-a-key").listen.v1.connect(
        model="nova-3", encoding="linear16", sample_rate=16000
    )
    with pytest.raises((ApiError, InvalidStatus)) as socket_refused, connecting:
        pass
    refused = socket_refused.value
    status = refused.status_code if isinstance(refused, ApiError) else cast(InvalidStatus, refused).response.status_code
    assert status == 401
