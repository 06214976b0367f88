"""`stt batch` end to end: a folder of real recordings (and a corrupt and a silent file) on Ray Data, with the
test service's own config, against what the running service answers the openai SDK for the same files."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import openai
import pytest

from devkit.media import SHARED_AUDIO, encode
from tests.conftest import Service

ROOT = Path(__file__).resolve().parents[1]
EXCERPTS = ("dev00.wav",)  # an AMI excerpt (60 s, two speakers) from ../shared, when present: a long real file


def stt_batch(*args: str | Path, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """The `stt` CLI's batch command, in a process of its own (its own Ray, stopped when it ends)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "stt_cli.main", "batch", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)


def manifest(output: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (output / "_manifest.jsonl").read_text().splitlines()]
    assert len(rows) == len({row["name"] for row in rows}), "one row per input"
    return {row["name"]: row for row in rows}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory, jfk_flac: Path, call_samples: np.ndarray) -> Path:
    folder = tmp_path_factory.mktemp("recordings")
    (folder / "jfk.flac").write_bytes(jfk_flac.read_bytes())
    (folder / "calls").mkdir()
    (folder / "calls" / "call.wav").write_bytes(encode(call_samples, "wav"))
    (folder / "corrupt.mp3").write_bytes(b"ID3 this is not audio at all" * 50)
    (folder / "silent.wav").write_bytes(encode(np.zeros(5 * 16_000, dtype=np.float32), "wav"))
    for name in EXCERPTS:
        if (SHARED_AUDIO / name).exists():
            (folder / name).write_bytes((SHARED_AUDIO / name).read_bytes())
    return folder


@pytest.fixture(scope="module")
def batch_output(service: Service, recordings: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("transcripts")
    run = stt_batch(recordings, output, "--response-format", "json", "--response-format", "srt",
                    "--config", service.process.workdir / "config.yaml", "--files-per-batch", "3")  # fmt: skip
    assert run.returncode == 1 and "1 errors" in run.stderr, run.stderr[-3000:]  # the corrupt file's row
    return output


def service_answer(service: Service, path: Path, response_format: Literal["json", "srt"]) -> str | None:
    """What the service answers the openai SDK for this file; None when it refuses it (a 4xx)."""
    client = openai.OpenAI(api_key=service.api_key, base_url=f"{service.base_url}/v1", max_retries=0, timeout=300)
    try:
        with path.open("rb") as audio:
            answer = client.audio.transcriptions.create(file=audio, model="whisper-1", response_format=response_format)
    except openai.BadRequestError:
        return None
    return answer if isinstance(answer, str) else answer.text


def test_one_output_per_good_file_with_the_services_text(
    service: Service, recordings: Path, batch_output: Path
) -> None:
    rows = manifest(batch_output)
    inputs = {str(path.relative_to(recordings).with_suffix("")): path for path in recordings.rglob("*.*")}
    assert set(rows) == set(inputs)
    assert rows["corrupt"]["status"] == "error" and "readable audio" in rows["corrupt"]["error"]
    for name, path in inputs.items():
        expected = service_answer(service, path, "json")
        if expected is None:  # the service refuses it: so does the batch, with an error row and no output
            assert rows[name]["status"] == "error", rows[name]
            assert not list(batch_output.glob(f"{name}.*"))
            continue
        assert rows[name]["status"] == "ok", rows[name]
        assert rows[name]["duration"] > 0 and rows[name]["language"] == "en"
        assert json.loads((batch_output / f"{name}.json").read_text())["text"] == expected, name
    assert (batch_output / "calls" / "call.srt").read_text() == service_answer(service, inputs["calls/call"], "srt")


def test_an_option_it_cannot_honour_is_refused_by_name(tmp_path: Path, recordings: Path) -> None:
    listing = tmp_path / "list.jsonl"
    listing.write_text(json.dumps({"path": str(recordings / "jfk.flac"), "task": "translate"}) + "\n")
    run = stt_batch(listing, tmp_path / "out")
    assert run.returncode == 2 and "task 'translate'" in run.stderr
    assert not (tmp_path / "out").exists()
