"""The `assemblyai` SDK, unchanged but for its base URL, against the real service and models: a file uploaded and
transcribed (words in milliseconds), speakers, exports, a webhook with its header, LeMUR's task answered by the
embedded LLM, listing, deleting, refused fields and a bad key as the SDK's own errors, each charged once."""

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import assemblyai as aai
import httpx
import numpy as np
import pytest

from devkit.callback_receiver import callback_receiver
from devkit.media import encode
from tests.conftest import Service
from tests.sdk_settings import assemblyai_pointed_at

PRICED_KEY = "test-key-analysis"
"""A key with a balance and a price (tests/conftest.py's keys file): its usage statement shows each charge."""


@pytest.fixture
def sdk(service: Service) -> Iterator[None]:
    """The SDK's global settings pointed at the service, as its README tells users to."""
    with assemblyai_pointed_at(service.base_url, PRICED_KEY):
        yield


def _charges(service: Service, request_id: str) -> int:
    with service.client(PRICED_KEY) as client:
        items = client.get("/v1/billing/usage", params={"limit": 100}).json()["items"]
    return sum(1 for item in items if item["request_id"] == request_id)


def test_a_file_is_transcribed_exported_asked_about_and_deleted(sdk: None, service: Service, jfk_flac: Path) -> None:
    transcript = aai.Transcriber().transcribe(str(jfk_flac))
    assert transcript.status == aai.TranscriptStatus.completed, transcript.error
    text = (transcript.text or "").lower()
    assert "ask not what your country can do for you" in text
    words = transcript.words or []
    assert " ".join(word.text for word in words) == transcript.text  # the words are the text
    assert all(word.end > word.start >= 0 for word in words)
    assert 9_000 < words[-1].end <= 11_100  # milliseconds: jfk.flac is 11 s
    assert all(earlier.start <= later.start for earlier, later in itertools.pairwise(words))
    assert transcript.audio_duration == 11 and 0 < (transcript.confidence or 0) <= 1
    assert transcript.json_response is not None and transcript.json_response["speech_model_used"] == "whisper-1"

    srt = transcript.export_subtitles_srt()
    assert srt.startswith("1\n00:00:00,") and "country" in srt.lower()
    vtt = transcript.export_subtitles_vtt(chars_per_caption=32)
    cues = [line for line in vtt.splitlines()[1:] if line and "-->" not in line]
    assert vtt.startswith("WEBVTT") and cues and all(len(cue) <= 32 for cue in cues)
    sentences = transcript.get_sentences()
    assert [word.text for sentence in sentences for word in sentence.words] == [word.text for word in words]
    assert all(sentence.start < sentence.end and sentence.text for sentence in sentences)
    paragraphs = transcript.get_paragraphs()
    assert paragraphs and " ".join(p.text for p in paragraphs).lower().count("country") >= 2

    with service.client(PRICED_KEY, timeout=600) as client:  # the SDK of this version has no LeMUR client
        lemur = client.post(
            "/lemur/v3/generate/task",
            headers={"Authorization": PRICED_KEY},
            json={"transcript_ids": [transcript.id], "prompt": "What does the speaker ask?", "final_model": "default"},
        )
    assert lemur.status_code == 200, lemur.text
    answer = lemur.json()
    assert answer["response"].strip() and answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] > 0
    assert _charges(service, str(transcript.id)) == 1 and _charges(service, answer["request_id"]) == 1

    listed = aai.Transcriber().list_transcripts()
    assert str(transcript.id) in [item.id for item in listed.transcripts]
    deleted = aai.Transcript.delete_by_id(str(transcript.id))
    assert deleted.text == "Deleted by user."
    with pytest.raises(aai.TranscriptError) as gone:
        aai.Transcript.get_by_id(str(transcript.id))
    assert gone.value.status_code == 404 and "not found" in str(gone.value)


def test_speaker_labels_on_the_call_give_speakers_a_and_b(sdk: None, call_samples: np.ndarray) -> None:
    config = aai.TranscriptionConfig(speaker_labels=True, speakers_expected=2)
    transcript = aai.Transcriber(config=config).transcribe(encode(call_samples, "wav"))
    assert transcript.status == aai.TranscriptStatus.completed, transcript.error
    utterances = transcript.utterances or []
    assert {utterance.speaker for utterance in utterances} == {"A", "B"}
    assert all(utterance.words and utterance.end > utterance.start for utterance in utterances)
    assert {word.speaker for word in transcript.words or []} == {"A", "B"}


def test_the_webhook_arrives_with_its_header_unsigned(sdk: None, speech_wav: bytes) -> None:
    with callback_receiver() as receiver:
        config = aai.TranscriptionConfig().set_webhook(receiver.url, "X-Hook-Token", "hook-secret")
        submitted = aai.Transcriber(config=config).submit(speech_wav)
        (received,) = receiver.wait_for(1, timeout_s=240)
    assert json.loads(received.body) == {"transcript_id": submitted.id, "status": "completed"}
    assert received.headers["X-Hook-Token"] == "hook-secret" and "X-STT-Signature" not in received.headers
    for _ in range(40):  # the delivery is recorded just after the receiver answers
        polled = aai.Transcript.get_by_id(str(submitted.id))
        if polled.webhook_status_code == 200:
            break
        time.sleep(0.5)
    assert polled.webhook_status_code == 200 and polled.webhook_auth is True


def test_refused_fields_and_a_bad_key_are_the_sdks_errors(sdk: None, service: Service, speech_wav: bytes) -> None:
    boosted = aai.TranscriptionConfig(auto_highlights=True, auto_chapters=True)
    with pytest.raises(aai.TranscriptError) as refused:  # a URL: refused before anything is fetched
        aai.Transcriber(config=boosted).transcribe("https://example.com/call.wav")
    assert refused.value.status_code == 400
    assert "auto_highlights" in str(refused.value) and "auto_chapters" in str(refused.value)
    with pytest.raises(aai.TranscriptError) as bad_key:
        aai.Transcriber(api_key="not-a-key").transcribe(speech_wav)
    assert bad_key.value.status_code == 401 and "credentials" in str(bad_key.value)
    answer = httpx.post(f"{service.base_url}/v2/transcript", headers={"Authorization": "not-a-key"}, json={})
    assert answer.status_code == 401 and set(answer.json()) == {"error"}
    assert list((service.state_dir / "spool").glob("assemblyai-upload-*")) == []  # every upload was used
