"""Streaming form reception (serve_app.common.upload): limits enforced while reading, nothing left on disk on
failure."""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from serve_app.common.upload import (
    FIELD_ALLOWANCES,
    FORM_OVERHEAD_BYTES,
    MAX_FIELD_BYTES,
    MAX_FIELDS,
    FormRejectedError,
    receive_form,
)

BOUNDARY = "test-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def part(name: str, value: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    return f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"


def body(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def request(content: bytes, content_type: str = MULTIPART, chunk: int = 1000, headers: dict | None = None):
    """A Starlette request whose body arrives in `chunk`-byte messages, counting how many were read."""
    chunks = [content[i : i + chunk] for i in range(0, len(content), chunk)] or [b""]
    state = {"read": 0}

    async def receive() -> dict:
        index = state["read"]
        state["read"] += 1
        if index >= len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[index], "more_body": index < len(chunks) - 1}

    raw_headers = [(b"content-type", content_type.encode())]
    raw_headers += [(name.encode(), value.encode()) for name, value in (headers or {}).items()]
    return Request({"type": "http", "method": "POST", "headers": raw_headers}, receive), state


def receive(content: bytes, spool: Path, limit: int = 10_000, **kwargs):
    http_request, state = request(content, **kwargs)
    return asyncio.run(receive_form(http_request, spool, limit)), state


def test_file_goes_to_disk_and_fields_to_memory(tmp_path: Path):
    audio = bytes(range(256)) * 20
    content = body(
        part("model", b"whisper-1"),
        part("file", audio, "a b.wav"),
        part("timestamp_granularities[]", b"word"),
        part("timestamp_granularities[]", b"segment"),
    )
    form, _ = receive(content, tmp_path / "spool" / "job")
    assert form.file.path.read_bytes() == audio and form.file.size == len(audio) and form.file.filename == "a b.wav"
    assert form.fields == {"model": ["whisper-1"], "timestamp_granularities[]": ["word", "segment"]}


def test_oversize_file_is_refused_mid_stream_and_removed(tmp_path: Path):
    content = body(part("file", b"x" * 50_000, "a.wav"))
    spool = tmp_path / "job"
    with pytest.raises(FormRejectedError) as rejected:
        receive(content, spool, limit=10_000, chunk=1000)
    assert rejected.value.status_code == 413 and "10000 bytes" in rejected.value.detail
    assert not spool.exists()


def test_declared_content_length_is_checked_before_reading(tmp_path: Path):
    http_request, state = request(b"", headers={"content-length": str(10_000 + FORM_OVERHEAD_BYTES + 1)})
    with pytest.raises(FormRejectedError) as rejected:
        asyncio.run(receive_form(http_request, tmp_path / "job", 10_000))
    assert rejected.value.status_code == 413 and state["read"] == 0


@pytest.mark.parametrize(
    ("content", "content_type", "status", "words"),
    [
        (b'{"file": 1}', "application/json", 415, "multipart/form-data"),
        (b"garbage", "multipart/form-data", 400, "boundary"),
        (b"--test-boundary\r\nnot a header line at all\r\n\r\n", MULTIPART, 400, "malformed"),
        (body(part("file", b"a", "a.wav"), part("file", b"b", "b.wav")), MULTIPART, 400, "exactly one file"),
        (body(part("audio", b"a", "a.wav")), MULTIPART, 400, "exactly one file"),
        (body(part("prompt", b"p" * (MAX_FIELD_BYTES + 1))), MULTIPART, 413, "too long"),
        (body(*[part(f"f{i}", b"1") for i in range(40)]), MULTIPART, 400, "too many form fields"),
    ],
)
def test_bad_forms_are_refused_with_a_reason(tmp_path: Path, content, content_type, status, words):
    spool = tmp_path / "job"
    with pytest.raises(FormRejectedError) as rejected:
        receive(content, spool, content_type=content_type)
    assert rejected.value.status_code == status and words in rejected.value.detail
    assert not spool.exists()


@pytest.mark.parametrize("name", sorted(FIELD_ALLOWANCES))
def test_a_field_allowance_counts_its_parts_apart_from_the_plain_fields(tmp_path: Path, name: str):
    allowance = FIELD_ALLOWANCES[name]
    plain = [part(f"f{i}", b"1") for i in range(MAX_FIELDS)]
    allowed = [part(name, b"v") for _ in range(allowance.max_parts)]
    form, _ = receive(body(*plain, *allowed), tmp_path / "job")
    assert len(form.fields) == MAX_FIELDS + 1 and form.fields[name] == ["v"] * allowance.max_parts

    other = f"{allowance.name}[]" if name == allowance.name else allowance.name  # the two spellings share a count
    with pytest.raises(FormRejectedError) as too_many:
        receive(body(*allowed, part(other, b"v")), tmp_path / "job")
    assert too_many.value.status_code == 400
    assert too_many.value.detail == f"{other}: at most {allowance.max_parts} {allowance.part}"

    with pytest.raises(FormRejectedError) as too_long:
        receive(body(part(name, b"v" * (allowance.max_bytes + 1))), tmp_path / "job")
    assert too_long.value.status_code == 413 and f"at most {allowance.max_bytes} bytes" in too_long.value.detail
    receive(body(part(name, b"v" * allowance.max_bytes)), tmp_path / "job")  # the limit itself is allowed


def test_urlencoded_form_carries_fields(tmp_path: Path):
    form, _ = receive(
        b"url=https%3A%2F%2Fexample.com%2Fa.mp3&task=transcribe",
        tmp_path / "job",
        content_type="application/x-www-form-urlencoded",
    )
    assert form.file is None and form.fields == {"url": ["https://example.com/a.mp3"], "task": ["transcribe"]}


def test_client_disconnect_mid_upload_leaves_nothing(tmp_path: Path):
    spool = tmp_path / "job"
    head = part("file", b"x" * 5000, "a.wav")[:-2]  # the body stops in the middle of the file part
    messages: Iterator[dict] = iter(
        [{"type": "http.request", "body": head, "more_body": True}, {"type": "http.disconnect"}]
    )

    async def receive() -> dict:
        return next(messages)

    http_request = Request(
        {"type": "http", "method": "POST", "headers": [(b"content-type", MULTIPART.encode())]}, receive
    )
    with pytest.raises(FormRejectedError) as rejected:
        asyncio.run(receive_form(http_request, spool, 10_000))
    assert rejected.value.status_code == 400 and "disconnected" in rejected.value.detail
    assert not spool.exists()
