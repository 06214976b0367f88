"""The CLI's job state file (what lets a re-run resume) and the WebSocket key from a browser's subprotocol."""

import time
from pathlib import Path

from starlette.requests import HTTPConnection

from serve_app.common.auth import subprotocol_key
from stt_cli.state import RETENTION_S, JobStateFile, SubmittedJob


def _job(job_id: str, **changes) -> SubmittedJob:
    fields = {
        "job_id": job_id,
        "base_url": "http://svc",
        "source": "/a.wav",
        "form": {"response_format": "srt"},
        "output": "/a.srt",
        "submitted_at": time.time(),
    }
    return SubmittedJob(**{**fields, **changes})


def test_a_rerun_finds_only_the_unfinished_job_of_the_same_command(tmp_path: Path) -> None:
    state = JobStateFile(tmp_path / "state" / "jobs.json")
    assert state.find("http://svc", "/a.wav", {"response_format": "srt"}, "/a.srt") is None  # no file yet
    state.add(_job("one"))
    state.add(_job("other-format", form={"response_format": "vtt"}, output="/a.vtt"))
    found = state.find("http://svc", "/a.wav", {"response_format": "srt"}, "/a.srt")
    assert found is not None and found.job_id == "one"
    assert state.find("http://elsewhere", "/a.wav", {"response_format": "srt"}, "/a.srt") is None
    state.mark_finished("one")
    assert state.find("http://svc", "/a.wav", {"response_format": "srt"}, "/a.srt") is None
    assert [job.job_id for job in state.load()] == ["one", "other-format"]  # kept, for `stt jobs`
    assert not list(state.path.parent.glob("*.tmp"))  # written whole, then renamed


def test_jobs_older_than_the_services_retention_are_dropped(tmp_path: Path) -> None:
    state = JobStateFile(tmp_path / "jobs.json")
    state.add(_job("old", submitted_at=time.time() - RETENTION_S - 1))
    state.add(_job("new"))
    assert [job.job_id for job in state.load()] == ["new"]


def test_a_damaged_state_file_is_read_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "jobs.json"
    path.write_text("{not json")
    assert JobStateFile(path).load() == []


def _connection(kind: str, protocols: str | None) -> HTTPConnection:
    headers = [(b"sec-websocket-protocol", protocols.encode())] if protocols is not None else []
    return HTTPConnection({"type": kind, "headers": headers, "path": "/v1/transcribe"})


def test_the_key_is_the_second_of_two_subprotocols_after_bearer() -> None:
    assert subprotocol_key(_connection("websocket", "bearer, sk-123")) == "sk-123"
    assert subprotocol_key(_connection("websocket", "bearer")) is None
    assert subprotocol_key(_connection("websocket", "chat, sk-123")) is None
    assert subprotocol_key(_connection("websocket", None)) is None
    assert subprotocol_key(_connection("http", "bearer, sk-123")) is None  # plain requests use Authorization
