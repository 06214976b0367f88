"""In-process: OpenAI's diarized_json request as the openai SDK sends it (model gpt-4o-transcribe-diarize,
chunking_strategy, known_speaker_names[] with known_speaker_references[]), synchronously and as a job: what
reaches the pipeline, what is refused, and that every spooled clip is removed."""

from pathlib import Path

import pytest

from deployments.types import PipelineRequest
from tests.fakes import Remote
from tests.inprocess import call
from tests.test_known_speakers import data_url, wav_bytes

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
AUDIO = {"file": ("call.wav", b"RIFF....WAVEfmt audio")}
CLIP = wav_bytes(2.5)
OPENAI_FORM = {
    "model": "gpt-4o-transcribe-diarize",
    "response_format": "diarized_json",
    "chunking_strategy[type]": "server_vad",
    "chunking_strategy[threshold]": "0.4",
    "chunking_strategy[silence_duration_ms]": "300",
    "known_speaker_names[]": ["agent", "customer"],
    "known_speaker_references[]": [data_url(CLIP), data_url(CLIP, "audio/wav")],
}


@pytest.fixture
def openai_ids(inprocess):
    inprocess.config.model_ids.append("gpt-4o-transcribe-diarize")  # as configs/local.yaml and the default have it
    return inprocess


def clips_seen_by_the_pipeline(service) -> list[bytes]:
    """Wrap the fake pipeline so that it records the clips' bytes while they are still spooled."""
    seen: list[bytes] = []
    transcribe = service.pipeline.transcribe

    async def recording(request: PipelineRequest):
        assert request.diarization is not None
        seen.extend(Path(speaker.reference_path).read_bytes() for speaker in request.diarization.known_speakers)
        return await transcribe.remote(request)

    service.pipeline.transcribe = Remote(recording)
    return seen


def test_diarized_json_as_the_openai_sdk_sends_it(openai_ids) -> None:
    seen = clips_seen_by_the_pipeline(openai_ids)
    response = call(openai_ids, "POST", SYNC, files=AUDIO, data=OPENAI_FORM)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"task", "duration", "text", "segments", "usage"}
    assert body["task"] == "transcribe" and body["usage"] == {"type": "duration", "seconds": 2.5}
    assert body["segments"][0] == {
        "type": "transcript.text.segment", "id": "seg_0", "start": 0.0, "end": 1.0, "text": "Hello",
        "speaker": "speaker_0",
    }  # fmt: skip
    request = openai_ids.pipeline.requests[-1]
    assert request.diarization is not None
    assert [speaker.name for speaker in request.diarization.known_speakers] == ["agent", "customer"]
    detection = request.options.speech_detection
    assert detection is not None and (detection.threshold, detection.silence_duration_ms) == (0.4, 300)
    assert detection.prefix_padding_ms == 200  # not given: the configured chunker's
    assert seen == [CLIP, CLIP]
    assert openai_ids.spooled() == []  # the upload and both clips


def test_chunking_strategy_auto_keeps_the_configured_chunking(openai_ids) -> None:
    form = {"model": "gpt-4o-transcribe-diarize", "response_format": "diarized_json", "chunking_strategy": "auto"}
    assert call(openai_ids, "POST", SYNC, files=AUDIO, data=form).status_code == 200
    request = openai_ids.pipeline.requests[-1]
    assert request.diarization is not None and request.options.speech_detection is None


def test_known_speakers_over_the_nexara_form_with_task_diarize(openai_ids) -> None:
    form = {"task": "diarize", "known_speaker_names[]": "agent", "known_speaker_references[]": data_url(CLIP)}
    response = call(openai_ids, "POST", "/api/v1/audio/transcriptions", files=AUDIO, data=form)
    assert response.status_code == 200 and response.json()["task"] == "diarize"
    request = openai_ids.pipeline.requests[-1]
    assert request.diarization is not None and request.diarization.known_speakers[0].name == "agent"


@pytest.mark.parametrize(
    ("form", "status", "words"),
    [
        ({"known_speaker_names[]": "a", "known_speaker_references[]": data_url(CLIP)}, 400, "requires task=diarize"),
        ({"response_format": "diarized_json", "known_speaker_names[]": "a"}, 400, "must pair up"),
        ({"response_format": "diarized_json", "known_speaker_names[]": "a",
          "known_speaker_references[]": "data:text/plain,hello"}, 400, "known_speaker_references[0]: the data URL"),
        ({"response_format": "diarized_json", "chunking_strategy": "fast"}, 400, "chunking_strategy: 'fast'"),
        ({"response_format": "diarized_json", "task": "transcribe"}, 422, "diarized_json is task=diarize's answer"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("route", [SYNC, ASYNC])
def test_bad_openai_fields_are_refused_and_nothing_is_kept(openai_ids, route, form, status, words) -> None:
    response = call(openai_ids, "POST", route, files=AUDIO, data=form)
    assert response.status_code == status and words in response.text
    assert openai_ids.pipeline.requests == [] and openai_ids.spooled() == []


def test_a_diarize_job_with_known_speakers_keeps_its_clips_until_it_is_done(openai_ids) -> None:
    created = call(openai_ids, "POST", ASYNC, files=AUDIO, data=OPENAI_FORM)
    assert created.status_code == 200, created.text
    job_id = created.json()["job_id"]
    for _ in range(100):
        job = call(openai_ids, "GET", f"{ASYNC}/{job_id}").json()
        if job["status"] != "in_progress":
            break
    assert job["status"] == "complete", job
    assert job["result"]["task"] == "transcribe" and job["result"]["segments"][1]["id"] == "seg_1"
    assert job["result"]["usage"]["type"] == "duration"
    request = openai_ids.pipeline.requests[-1]
    assert request.diarization is not None and request.diarization.known_speakers[1].name == "customer"
    assert request.options.speech_detection is not None
