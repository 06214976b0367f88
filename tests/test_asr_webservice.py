"""whisper-asr-webservice's `/asr` and `/detect-language` over the in-process app (fake pipeline): off unless
enabled, refused outside `allowed_networks`, charged once to the configured key, its output formats and its
refusals as FastAPI's `{"detail": ...}`. Through the running service: tests/test_asr_webservice_service.py."""

import dataclasses
import io
import json
import wave
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from deployments.jobs.records import owner_of
from serve_app.asr_webservice.config import AsrWebserviceConfig
from serve_app.asr_webservice.pcm import frame_as_wav
from serve_app.http_app import create_app
from tests.inprocess import BROKE_KEY, KEY, InProcessService, call
from tests.test_job_tracker import TRANSCRIPT

AUDIO = {"audio_file": ("audio_file", b"RIFF fake audio", "application/octet-stream")}


def enabled(inprocess: InProcessService, caller: str = "127.0.0.1", **settings: object) -> httpx.AsyncClient:
    """A client of the in-process app with the routes on (charged to the key named "test"), as `caller`."""
    assert inprocess.services is not None
    asr = AsrWebserviceConfig(enabled=True, **{"api_key_name": "test", **settings})
    config = inprocess.config.model_copy(update={"asr_webservice": asr})
    app = create_app(dataclasses.replace(inprocess.services, config=config))
    transport = httpx.ASGITransport(app=app, client=(caller, 4711))
    return httpx.AsyncClient(transport=transport, base_url="http://test")  # no key: these tools send none


def post(inprocess: InProcessService, client: httpx.AsyncClient, path: str, **kwargs: object) -> httpx.Response:
    return inprocess.loop.run_until_complete(client.post(path, **kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["/asr", "/detect-language"])
def test_the_routes_are_off_unless_enabled(inprocess: InProcessService, path: str) -> None:
    answer = call(inprocess, "POST", path, key=None, files=AUDIO)
    assert answer.status_code == 404
    assert answer.json() == {"detail": "Not Found"}


def test_a_caller_outside_the_allowed_networks_is_refused(inprocess: InProcessService) -> None:
    client = enabled(inprocess, caller="192.0.2.7")
    answer = post(inprocess, client, "/asr", files=AUDIO)
    assert answer.status_code == 403
    assert "address" in answer.json()["detail"]
    assert inprocess.pipeline.requests == []
    inside = enabled(inprocess, caller="192.0.2.7", allowed_networks=["192.0.2.0/24"])
    assert post(inprocess, inside, "/asr", files=AUDIO).status_code == 200


def test_asr_answers_whisper_asr_webservice_formats_and_charges_the_key_once(inprocess: InProcessService) -> None:
    client = enabled(inprocess)
    srt = post(inprocess, client, "/asr", params={"output": "srt", "task": "transcribe", "language": "en"}, files=AUDIO)
    assert srt.status_code == 200, srt.text
    assert srt.text.startswith("1\n00:00:00,000 --> 00:00:02,500\nHello there.\n")
    assert srt.headers["asr-engine"] == "faster_whisper"
    assert srt.headers["content-disposition"] == 'attachment; filename="audio_file.srt"'
    assert inprocess.ledger.usage(owner_of(KEY)) == TRANSCRIPT.duration  # once, to the configured key
    txt = post(inprocess, client, "/asr", files=AUDIO)  # output=txt by default
    assert txt.text == "Hello there.\n"
    tsv = post(inprocess, client, "/asr", params={"output": "tsv"}, files=AUDIO)
    assert tsv.text == "start\tend\ttext\n0\t2500\tHello there.\n"
    assert post(inprocess, client, "/asr", params={"output": "vtt"}, files=AUDIO).text.startswith("WEBVTT")
    result = json.loads(post(inprocess, client, "/asr", params={"output": "json", "word_timestamps": "true"},
                             files=AUDIO).text)  # fmt: skip
    assert result["text"] == TRANSCRIPT.text and result["language"] == "en"
    assert [word["word"] for word in result["segments"][0]["words"]] == ["Hello", "there."]
    request = inprocess.pipeline.requests[-1]
    assert request.options.word_timestamps and request.options.task == "transcribe"


def test_translate_prompt_and_diarize_reach_the_pipeline(inprocess: InProcessService) -> None:
    client = enabled(inprocess)
    params = {"task": "translate", "initial_prompt": "Names: Ada.", "encode": "true"}
    assert post(inprocess, client, "/asr", params=params, files=AUDIO).status_code == 200
    options = inprocess.pipeline.requests[-1].options
    assert (options.task, options.prompt) == ("translate", "Names: Ada.")
    params = {"diarize": "true", "min_speakers": "1", "max_speakers": "2", "output": "srt"}
    diarized = post(inprocess, client, "/asr", params=params, files=AUDIO)
    assert "[speaker_0] Hello" in diarized.text and "[speaker_1] there." in diarized.text  # a cue per speaker
    diarization = inprocess.pipeline.requests[-1].diarization
    assert diarization is not None and (diarization.min_speakers, diarization.max_speakers) == (1, 2)


def test_raw_pcm_is_framed_as_wav(inprocess: InProcessService, tmp_path: Path) -> None:
    seen: list[bytes] = []
    transcribe = inprocess.pipeline._transcribe

    async def reading(request):
        seen.append(Path(request.source_path).read_bytes())
        return await transcribe(request)

    inprocess.pipeline.transcribe.function = reading
    pcm = bytes(range(256)) * 125 + b"\x01"  # 32 001 bytes: one second of samples and an odd byte
    audio = {"audio_file": ("audio_file", pcm, "application/octet-stream")}
    answer = post(inprocess, enabled(inprocess), "/asr", params={"encode": "false", "output": "srt"}, files=audio)
    assert answer.status_code == 200, answer.text
    with wave.open(io.BytesIO(seen[0])) as framed:
        assert (framed.getframerate(), framed.getnchannels(), framed.getsampwidth()) == (16_000, 1, 2)
        assert framed.readframes(framed.getnframes()) == pcm[:32_000]
    assert inprocess.spooled() == []


def test_frame_as_wav_keeps_the_first_seconds_and_refuses_no_samples(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.write_bytes(b"\0\1" * 16_000 * 3)
    frame_as_wav(raw, max_seconds=1)
    with wave.open(str(raw)) as framed:
        assert framed.getnframes() == 16_000
    raw.write_bytes(b"\0")
    with pytest.raises(Exception, match="no samples"):
        frame_as_wav(raw)


def test_detect_language(inprocess: InProcessService) -> None:
    answer = post(inprocess, enabled(inprocess), "/detect-language", params={"encode": "true"}, files=AUDIO)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"detected_language": "english", "language_code": "en", "confidence": 1.0}
    assert inprocess.ledger.usage(owner_of(KEY)) == TRANSCRIPT.duration


@pytest.mark.parametrize(
    ("params", "files", "status", "names"),
    [
        ({"output": "docx"}, AUDIO, 422, "output"),
        ({"beam_size": "5"}, AUDIO, 400, "beam_size"),
        ({"language": "xx"}, AUDIO, 400, "language"),
        ({"min_speakers": "2"}, AUDIO, 400, "diarize"),
        ({}, {"file": ("a.wav", b"RIFF", "audio/wav")}, 400, "audio_file"),
        ({}, {"audio_file": ("a.wav", b"", "audio/wav")}, 400, "empty"),
        ({}, {"audio_file": ("a.wav", b"not audio", "audio/wav")}, 400, "not a readable"),
    ],
)
def test_bad_input_is_a_4xx_detail_and_not_charged(
    inprocess: InProcessService, params: dict[str, str], files: dict[str, tuple[str, bytes, str]], status: int,
    names: str,
) -> None:  # fmt: skip
    answer = post(inprocess, enabled(inprocess), "/asr", params=params, files=files)
    assert answer.status_code == status, answer.text
    assert names in json.dumps(answer.json()["detail"])
    assert inprocess.ledger.usage(owner_of(KEY)) == 0.0
    assert inprocess.spooled() == []


def test_the_configured_key_s_balance_and_a_missing_key(inprocess: InProcessService) -> None:
    broke = post(inprocess, enabled(inprocess, api_key_name="broke"), "/asr", files=AUDIO)
    assert broke.status_code == 402
    unnamed = post(inprocess, enabled(inprocess, api_key_name="nobody"), "/asr", files=AUDIO)
    assert unnamed.status_code == 503 and "STT_ASR_WEBSERVICE_KEY" in unnamed.json()["detail"]


def test_the_key_from_the_environment_wins(inprocess: InProcessService) -> None:
    assert inprocess.services is not None
    inprocess.services = dataclasses.replace(inprocess.services, asr_webservice_key=SecretStr(BROKE_KEY))
    assert post(inprocess, enabled(inprocess), "/asr", files=AUDIO).status_code == 402
