"""`stt batch s3://... s3://...` end to end: real recordings in a bucket (moto's standalone S3 server, as the
cluster's object store) transcribed by Whisper through the batch's stages, the outputs and `_manifest.jsonl` read
back from the bucket; the driver's scratch folder is gone when it ends, and a rerun writes nothing new."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from pyarrow import fs

from deployments.batch.inputs import filesystem
from devkit.media import encode
from tests.test_batch_s3 import BUCKET, s3, s3_endpoint  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow  # a Ray of its own, in the batch's process

ROOT = Path(__file__).resolve().parents[1]


def put(uri: str, body: bytes) -> None:
    filesystem_, path = filesystem(uri)
    with filesystem_.open_output_stream(path) as stream:
        stream.write(body)


def get(uri: str) -> str:
    filesystem_, path = filesystem(uri)
    with filesystem_.open_input_stream(path) as stream:
        return bytes(stream.read()).decode("utf-8")


def snapshot(uri: str) -> dict[str, object]:
    """Each object under `uri` and when it was last written."""
    filesystem_, path = filesystem(uri)
    return {info.path: info.mtime for info in filesystem_.get_file_info(fs.FileSelector(path, recursive=True))}


def run_batch(command: list[str]) -> tuple[int, str, int]:
    """The batch's exit status, its standard error and its process id."""
    batch = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True
    )
    _, stderr = batch.communicate(timeout=600)
    return batch.returncode, stderr, batch.pid


def test_a_batch_reads_and_writes_a_bucket(s3: str, jfk_flac: Path, call_samples: np.ndarray, tmp_path: Path) -> None:  # noqa: F811
    put(f"{s3}/e2e/in/jfk.flac", jfk_flac.read_bytes())
    put(f"{s3}/e2e/in/calls/call.wav", encode(call_samples[: 20 * 16_000], "wav"))
    put(f"{s3}/e2e/in/corrupt.mp3", b"ID3 this is not audio at all" * 50)
    config = tmp_path / "args.yaml"  # the application's args: the model the cluster test uses, for speed
    config.write_text(yaml.safe_dump({"whisper": {"model": "embedded:tiny.en", "cpu_threads": 1}}))
    options = ["--response-format", "json", "--response-format", "srt", "--language", "en", "--config", str(config)]
    command = [sys.executable, "-m", "serve_app.batch", f"{s3}/e2e/in", f"{s3}/e2e/out", *options]
    returncode, stderr, pid = run_batch(command)
    assert returncode == 1, stderr[-3000:]  # 1: the corrupt file's error row
    # on CPUs Ray Data runs the decoding inside the engine actors (its operator fusion: equal resources)
    assert "[MapBatches(decode_parts)->MapBatches(ChunkTranscriber)]" in stderr, stderr[-3000:]

    rows = {row["name"]: row for row in map(json.loads, get(f"{s3}/e2e/out/_manifest.jsonl").splitlines())}
    assert sorted(rows) == ["calls/call", "corrupt", "jfk"]
    assert rows["corrupt"]["status"] == "error" and "not a readable audio" in rows["corrupt"]["error"]
    assert rows["jfk"]["status"] == rows["calls/call"]["status"] == "ok"
    assert rows["jfk"]["outputs"] == ["jfk.json", "jfk.srt"] and rows["jfk"]["duration"] == pytest.approx(11.0, abs=0.1)
    jfk = json.loads(get(f"{s3}/e2e/out/jfk.json"))["text"].lower()
    assert "ask not what your country can do for you" in jfk
    assert "-->" in get(f"{s3}/e2e/out/calls/call.srt")
    assert json.loads(get(f"{s3}/e2e/out/calls/call.json"))["text"].strip()
    assert not list(Path(tempfile.gettempdir()).glob(f"stt-batch-{pid}-*")), "the driver's scratch is left"

    written = snapshot(f"{s3}/e2e/out")
    returncode, stderr, _ = run_batch(command)  # a rerun: every file is done or in error
    assert returncode == 1, stderr[-3000:]  # the manifest still holds the corrupt file's error
    assert snapshot(f"{s3}/e2e/out") == written
