"""The batch's listing, manifests and atomic outputs on S3 (pyarrow's S3 filesystem against moto's standalone
server, as the cluster's object store): what `stt batch s3://... s3://...` reads and writes."""

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyarrow import fs

from deployments.batch.inputs import filesystem, list_inputs
from deployments.batch.outputs import OutputFolder
from deployments.batch.resume import pending
from deployments.batch.tasks import FileTask, Outcome
from deployments.types import TranscriptionOptions

BUCKET = "archive"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free loopback port, with one bucket holding a folder of recordings and a manifest."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server_bin = Path(sys.executable).parent / "moto_server"
    server = subprocess.Popen([str(server_bin), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.put(f"{endpoint}/{BUCKET}").raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for key in ("calls/a.wav", "calls/b/c.mp3", "calls/_skip.wav", "list.jsonl"):
            body = b'{"path": "calls/a.wav", "language": "en"}\n' if key == "list.jsonl" else b"audio"
            httpx.put(f"{endpoint}/{BUCKET}/{key}", content=body).raise_for_status()
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """pyarrow finds the endpoint and the credentials where every S3 client does: the environment."""
    for name, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    return f"s3://{BUCKET}"


def test_a_prefix_lists_its_objects_as_s3_uris(s3: str) -> None:
    listed = list_inputs(f"{s3}/calls/")
    assert [(item.source, item.name) for item in listed] == [
        (f"{s3}/calls/a.wav", "a"),
        (f"{s3}/calls/b/c.mp3", "b/c"),
    ]
    store, path = filesystem(listed[0].source)
    with store.open_input_stream(path) as stream:
        assert stream.read() == b"audio"


def test_a_manifest_on_s3_reads_its_rows_beside_it(s3: str) -> None:
    [row] = list_inputs(f"{s3}/list.jsonl")
    assert (row.source, row.name, row.overrides) == (f"{s3}/calls/a.wav", "a", {"language": "en"})


def test_outputs_markers_and_the_manifest_on_s3(s3: str) -> None:
    output = OutputFolder(f"{s3}/transcripts")
    done = output.finish(Outcome(name="b/c", source="x", status="ok", duration=2.0), {"b/c.json": '{"text": "hi"}'})
    output.write_manifest([done])
    assert output.read("b/c.json") == '{"text": "hi"}'
    assert output.markers() == {"b/c"} and output.read_manifest() == [done]
    task = FileTask(source="x", name="b/c", options=TranscriptionOptions())
    assert pending([task, task.model_copy(update={"name": "a"})], output, retry_errors=False)[0][0].name == "a"
    names = [info.path for info in output.fs.get_file_info(fs.FileSelector(output.root, recursive=True))]
    assert not [name for name in names if name.endswith(".tmp")]  # every temporary renamed into place
