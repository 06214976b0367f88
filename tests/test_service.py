"""End to end over HTTP against the real service (`serve run`, real tiny.en Whisper), as clients call it."""

import io

import httpx
import numpy as np
import openai
import pytest
import srt
import webvtt

from devkit.media import FORMATS, JFK_REFERENCE, encode, pyannote_sample
from devkit.wer import stm_transcript, word_error_rate
from tests.conftest import API_KEYS, GREETING, Service


def test_models_are_listed_on_both_paths(service: Service, openai_client: openai.OpenAI) -> None:
    assert [model.id for model in openai_client.models.list()] == [
        "whisper-1",
        "whisper-base",
        "nexara-ru",
        "gpt-4o-transcribe",
        "gpt-4o-mini-transcribe",
        "gpt-4o-transcribe-diarize",
    ]  # configs/local.yaml
    with service.client() as client:
        body = client.get("/models").json()
    assert body["object"] == "list"
    assert body["data"][0] == {**body["data"][0], "id": "whisper-1", "object": "model"}
    assert isinstance(body["data"][0]["created"], int)


def test_real_telephone_speech_matches_its_human_transcript(openai_client: openai.OpenAI) -> None:
    """sample.wav ships with pyannote.audio with a human transcript (sample.stm). tiny.en measures 16%
    WER on this 8 kHz two-speaker call with overlapping speech; jfk.flac below holds the 15% bar."""
    path = pyannote_sample()
    with path.open("rb") as audio:
        transcription = openai_client.audio.transcriptions.create(model="whisper-1", file=audio)
    reference = stm_transcript(path.with_suffix(".stm"))
    assert word_error_rate(reference, transcription.text) <= 0.20
    for phrase in ("diane in new jersey", "originally from chicago", "yankee"):
        assert phrase in transcription.text.lower()


def test_clean_speech_word_error_rate_at_most_15_percent(openai_client: openai.OpenAI, jfk_flac) -> None:
    with jfk_flac.open("rb") as audio:
        transcription = openai_client.audio.transcriptions.create(model="whisper-1", file=audio, language="en")
    assert word_error_rate(JFK_REFERENCE, transcription.text) <= 0.15


def test_text_format(openai_client: openai.OpenAI, greeting: bytes) -> None:
    text = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("greeting.wav", greeting), response_format="text"
    )
    assert isinstance(text, str)
    assert "know you were there" in text.lower()


def test_srt_format_parses_as_subrip(openai_client: openai.OpenAI, greeting: bytes) -> None:
    document = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("greeting.wav", greeting), response_format="srt"
    )
    cues = list(srt.parse(document))
    assert [cue.index for cue in cues] == list(range(1, len(cues) + 1))
    assert all(0 <= cue.start.total_seconds() < cue.end.total_seconds() <= 4.01 for cue in cues)
    assert "know you were there" in " ".join(cue.content for cue in cues).lower()


def test_vtt_format_parses_as_webvtt(openai_client: openai.OpenAI, greeting: bytes) -> None:
    document = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("greeting.wav", greeting), response_format="vtt"
    )
    assert document.startswith("WEBVTT")
    captions = webvtt.from_buffer(io.StringIO(document)).captions
    assert captions
    times = [(caption.start_time.in_milliseconds(), caption.end_time.in_milliseconds()) for caption in captions]
    assert all(0 <= start < end <= 4010 for start, end in times), document  # webvtt's *_in_seconds are whole
    assert "know you were there" in " ".join(caption.text for caption in captions).lower()


def test_verbose_json_with_word_timestamps(openai_client: openai.OpenAI, greeting: bytes) -> None:
    result = openai_client.audio.transcriptions.create(
        model="whisper-1",
        file=("greeting.wav", greeting),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    body = result.model_dump()
    assert body["task"] == "transcribe"
    assert body["language"] == "english"  # OpenAI gives the name
    assert body["duration"] == pytest.approx(4.0, abs=0.05)
    assert "know you were there" in body["text"].lower()
    segment_fields = {"id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob"}
    segment_fields |= {"compression_ratio", "no_speech_prob"}
    assert body["segments"] and all(segment_fields <= set(segment) for segment in body["segments"])
    assert [segment["id"] for segment in body["segments"]] == list(range(len(body["segments"])))
    words = body["words"]
    assert {word["word"].strip().lower().strip(".,?") for word in words} >= {"know", "you", "were", "there"}
    for word in words:
        assert set(word) >= {"word", "start", "end", "prob"}
        assert 0 <= word["start"] <= word["end"] <= 4.01
        assert 0 <= word["prob"] <= 1
    assert [word["start"] for word in words] == sorted(word["start"] for word in words)
    # Segments are sentences timed by their words (text-only decoding, then alignment): each starts at its
    # first word's start and ends at its last word's end.
    starts, ends = {word["start"] for word in words}, {word["end"] for word in words}
    assert len(body["segments"]) >= 2  # "Hello. Oh, hello. I didn't know you were there." is not one segment
    assert all(segment["start"] in starts and segment["end"] in ends for segment in body["segments"])


def test_verbose_json_without_words_has_segments_only(openai_client: openai.OpenAI, greeting: bytes) -> None:
    body = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("greeting.wav", greeting), response_format="verbose_json"
    ).model_dump()
    assert body["segments"]
    assert body.get("words") is None


@pytest.mark.parametrize(
    ("response_format", "media_type"),
    [
        ("json", "application/json"),
        ("verbose_json", "application/json"),
        ("text", "text/plain; charset=utf-8"),
        ("srt", "text/plain; charset=utf-8"),
        ("vtt", "text/vtt"),
    ],
)
def test_media_types(service: Service, greeting: bytes, response_format: str, media_type: str) -> None:
    with service.client() as client:
        response = client.post(
            "/v1/audio/transcriptions",
            files={"file": ("greeting.wav", greeting)},
            data={"model": "whisper-1", "response_format": response_format},
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media_type)


@pytest.mark.parametrize("extension", sorted(FORMATS))
def test_every_input_format(service: Service, call_samples: np.ndarray, extension: str) -> None:
    data = encode(call_samples[GREETING], extension)
    with service.client() as client:
        response = client.post("/v1/audio/transcriptions", files={"file": (f"greeting.{extension}", data)})
    assert response.status_code == 200, response.text
    assert "know you were there" in response.json()["text"].lower()


# ---- bad input: each gets its documented status and a detail that says what to fix ----


def _post(service: Service, files=None, data=None, api_key: str | None = None) -> httpx.Response:
    with service.client(api_key=api_key) as client:
        return client.post("/v1/audio/transcriptions", files=files, data=data)


def _messages(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, list) and all(set(item) == {"loc", "msg", "type"} for item in detail)
    return " ".join(item["msg"] for item in detail)


def test_neither_file_nor_url_is_a_validation_error(service: Service) -> None:
    response = _post(service, data={"model": "whisper-1"})
    assert response.status_code == 422
    assert "exactly one of 'file'" in _messages(response)


def test_both_file_and_url_is_a_validation_error(service: Service, greeting: bytes) -> None:
    response = _post(service, files={"file": ("a.wav", greeting)}, data={"url": "https://example.com/a.wav"})
    assert response.status_code == 422
    assert "exactly one of 'file'" in _messages(response)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("response_format", "docx"),
        ("task", "translate"),
        ("diarization_setting", "concert"),
        ("timestamp_granularities[]", "paragraph"),
        ("language", "klingon"),
        ("num_speakers", "-1"),
        ("num_speakers", "nan"),
        ("temperature", "7"),
    ],
)
def test_unknown_or_out_of_range_values_are_validation_errors(
    service: Service, greeting: bytes, field: str, value: str
) -> None:
    response = _post(service, files={"file": ("a.wav", greeting)}, data={field: value})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["body", field]


def test_word_timestamps_need_verbose_json(service: Service, greeting: bytes) -> None:
    response = _post(
        service,
        files={"file": ("a.wav", greeting)},
        data={"timestamp_granularities[]": "word", "response_format": "json"},
    )
    assert response.status_code == 422
    assert "requires response_format=verbose_json" in _messages(response)


@pytest.mark.parametrize("api_key", ["", "wrong-key", API_KEYS[0] + "x"])
def test_bad_or_missing_key_is_401_on_every_endpoint(service: Service, greeting: bytes, api_key: str) -> None:
    with httpx.Client(base_url=service.base_url, timeout=60) as client:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        responses = [
            client.get("/v1/models", headers=headers),
            client.get("/models", headers=headers),
            client.post("/v1/audio/transcriptions", headers=headers, files={"file": ("a.wav", greeting)}),
        ]
    for response in responses:
        assert response.status_code == 401
        assert response.json() == {"detail": "authentication credentials were not provided or are invalid"}
        assert response.headers["www-authenticate"] == "Bearer"


def test_second_key_is_accepted(service: Service) -> None:
    with service.client(api_key=API_KEYS[1]) as client:
        assert client.get("/v1/models").status_code == 200


def test_corrupt_bytes_are_400_audio_processing_failed(service: Service) -> None:
    response = _post(service, files={"file": ("song.mp3", b"this is not audio at all" * 100)})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("audio processing failed: ")


def test_too_short_clip_is_400(service: Service, call_samples: np.ndarray) -> None:
    clip = encode(call_samples[GREETING][: int(0.2 * 16_000)], "wav")
    response = _post(service, files={"file": ("short.wav", clip)})
    assert response.status_code == 400
    assert "too short" in response.json()["detail"]
    assert "0.3 s" in response.json()["detail"]


def test_empty_file_is_400(service: Service) -> None:
    response = _post(service, files={"file": ("empty.wav", b"")})
    assert response.status_code == 400
    assert response.json() == {"detail": "the uploaded file is empty"}


def test_a_url_is_fetched_and_transcribed(service: Service, media_url: str) -> None:
    response = _post(service, data={"url": f"{media_url}/redirect-to-speech", "response_format": "text"})
    assert response.status_code == 200, response.text
    assert "hello" in response.text.lower()


@pytest.mark.parametrize(
    ("path", "status", "phrase"),
    [
        ("/missing", 400, "HTTP 404"),
        ("/page.html", 400, "audio processing failed"),
        ("/redirect-to-metadata", 400, "non-public address"),
        ("/slow", 400, "timed out"),
        ("/big.wav", 413, "larger than the limit"),
    ],
)
def test_a_failing_url_is_a_4xx_naming_the_reason(
    service: Service, media_url: str, path: str, status: int, phrase: str
) -> None:
    response = _post(service, data={"url": f"{media_url}{path}"})
    assert response.status_code == status and phrase in response.json()["detail"]


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1/a.mp3", "http://[::1]/a.mp3", "http://169.254.169.254/", "http://127.0.0.2/a.mp3"]
)
def test_private_addresses_are_refused_without_an_allow_list(service: Service, url: str) -> None:
    """The test service's allow-list opens 127.0.0.1 only; the rest of loopback stays shut."""
    response = _post(service, data={"url": url})
    assert response.status_code == 400 and "non-public address" in response.json()["detail"], response.text


def test_service_still_serves_after_bad_input(service: Service, greeting: bytes) -> None:
    _post(service, files={"file": ("x.mp3", b"\x00" * 10)})
    response = _post(service, files={"file": ("a.wav", greeting)})
    assert response.status_code == 200
