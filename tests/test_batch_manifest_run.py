"""`stt batch` on a manifest with per-row choices (an id, a language, diarization and a speaker count), end to end
on a Ray of its own: each row's output carries its choices. (A folder, against the running service's answers,
is tests/test_batch_service.py's.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from devkit.media import JFK_REFERENCE, encode
from devkit.wer import word_error_rate

pytestmark = pytest.mark.slow  # a Ray of its own, in the batch's process

ROOT = Path(__file__).resolve().parents[1]


def test_a_manifest_with_per_row_choices(jfk_flac: Path, call_samples: np.ndarray, tmp_path: Path) -> None:
    (tmp_path / "calls").mkdir()  # the call's first 16 s: both speakers, three turns each
    (tmp_path / "calls" / "call.wav").write_bytes(encode(call_samples[: 16 * 16_000], "wav"))
    listing = tmp_path / "list.csv"
    listing.write_text(f"path,id,language,task,num_speakers\n{jfk_flac},kennedy,en,,\ncalls/call.wav,call,,diarize,2\n")
    config = tmp_path / "args.yaml"  # the application's args: the tests' model
    config.write_text(yaml.safe_dump({"whisper": {"model": "embedded:tiny.en", "cpu_threads": 1}}))
    output = tmp_path / "out"
    command = [sys.executable, "-m", "stt_cli.main", "batch", str(listing), str(output), "--config", str(config)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]

    rows = [json.loads(line) for line in (output / "_manifest.jsonl").read_text().splitlines()]
    assert {row["name"]: row["status"] for row in rows} == {"kennedy": "ok", "call": "ok"}  # named by their ids
    kennedy = json.loads((output / "kennedy.json").read_text())
    assert word_error_rate(JFK_REFERENCE, kennedy["text"]) <= 0.15, kennedy["text"]
    diarized = json.loads((output / "call.json").read_text())
    assert len({segment["speaker"] for segment in diarized["segments"]}) == 2
    assert all(segment["end"] > segment["start"] for segment in diarized["segments"])
