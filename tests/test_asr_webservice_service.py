"""whisper-asr-webservice's `/asr` and `/detect-language` through the running service, as Bazarr's whisperai
provider and other subtitle tools call them: plain HTTP, no key, the audio in `audio_file` (a file, or raw
16 kHz s16le PCM with `encode=false`), options in the query string. The session service enables the routes for
loopback, charged to the keys-file key `asr-webservice` (conftest.ASR_WEBSERVICE_CONFIG)."""

import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from deployments.files.decoding import decode_audio
from tests.conftest import Service

KEY = "test-key-asr-webservice"  # conftest.KEYS_FILE: what the routes are charged to, used by this module only
JFK_WORDS = "what your country can do for you"


@pytest.fixture(scope="module")
def tool(service: Service) -> httpx.Client:
    """A subtitle tool's client: no Authorization header."""
    return httpx.Client(base_url=service.base_url, timeout=300)


@pytest.fixture(scope="module")
def jfk_pcm(jfk_flac: Path) -> bytes:
    """jfk as Bazarr sends it: ffmpeg's `-f s16le -ac 1 -ar 16000` output, no container."""
    samples = decode_audio(jfk_flac).samples
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def words(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalpha() or c.isspace()).split())


def usage(service: Service) -> list[dict]:
    with service.client(KEY) as client:
        items: list[dict] = client.get("/v1/billing/usage", params={"limit": 50}).json()["items"]
    return items


def test_srt_and_txt_of_a_file_and_one_charge_each(service: Service, tool: httpx.Client, jfk_flac: Path) -> None:
    before = len(usage(service))
    audio = {"audio_file": ("jfk.flac", jfk_flac.read_bytes())}
    srt = tool.post("/asr", params={"task": "transcribe", "language": "en", "output": "srt"}, files=audio)
    assert srt.status_code == 200, srt.text
    assert srt.text.startswith("1\n00:00:0")
    assert " --> " in srt.text and JFK_WORDS in words(srt.text)
    assert srt.headers["content-disposition"] == 'attachment; filename="jfk.flac.srt"'
    assert srt.headers["asr-engine"]
    txt = tool.post("/asr", params={"output": "txt"}, files=audio)
    assert txt.status_code == 200 and JFK_WORDS in words(txt.text)
    deadline = time.monotonic() + 10
    while len(usage(service)) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    charged = usage(service)[:2]
    assert len(usage(service)) == before + 2  # one charge per request
    assert all(10 < item["seconds"] < 12 for item in charged)  # jfk is 11 s


def test_raw_pcm_with_encode_false_as_bazarr_sends_it(tool: httpx.Client, jfk_pcm: bytes) -> None:
    params = {"task": "transcribe", "language": "en", "output": "srt", "encode": "false"}
    answer = tool.post("/asr", params=params, files={"audio_file": jfk_pcm})
    assert answer.status_code == 200, answer.text
    assert JFK_WORDS in words(answer.text)


def test_json_output_is_whisper_s_result(tool: httpx.Client, jfk_flac: Path) -> None:
    answer = tool.post("/asr", params={"output": "json", "word_timestamps": "true"},
                       files={"audio_file": ("jfk.flac", jfk_flac.read_bytes())})  # fmt: skip
    result = answer.json()
    assert result["language"] == "en" and JFK_WORDS in words(result["text"])
    assert all({"id", "start", "end", "text", "words"} <= set(segment) for segment in result["segments"])


def test_detect_language(tool: httpx.Client, jfk_pcm: bytes) -> None:
    answer = tool.post("/detect-language", params={"encode": "false"}, files={"audio_file": jfk_pcm})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert (found["detected_language"], found["language_code"]) == ("english", "en")
    assert 0 <= found["confidence"] <= 1


@pytest.mark.parametrize(
    ("params", "files", "status"),
    [
        ({"output": "docx"}, {"audio_file": ("a.wav", b"RIFF")}, 422),
        ({"beam_size": "5"}, {"audio_file": ("a.wav", b"RIFF")}, 400),
        ({}, {"audio_file": ("a.wav", b"not audio at all")}, 400),
        ({"encode": "false"}, {"audio_file": ("a.pcm", b"\x00")}, 400),
    ],
)
def test_bad_input_is_a_4xx_detail(
    tool: httpx.Client, params: dict[str, str], files: dict[str, tuple[str, bytes]], status: int
) -> None:
    answer = tool.post("/asr", params=params, files=files)
    assert answer.status_code == status, answer.text
    assert answer.json()["detail"]
