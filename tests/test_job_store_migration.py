"""Job records of earlier versions are rewritten into the current shape when the store opens
(deployments/jobs/_migrations.py), once, so that rendering a job knows one shape only."""

import json
import sqlite3
from pathlib import Path
from typing import Any

from deployments.jobs._store import SQLJobStore
from deployments.jobs.records import JobStatus
from deployments.types import DiarizationSetting
from serve_app.rendering.response_formats import RenderSpec, ResponseFormat, TimestampGranularity, render_body
from tests.test_job_tracker import TRANSCRIPT

CREATED = "2026-01-01T00:00:00Z"
DONE = "2026-01-01T00:01:00Z"
DIARIZED = {
    "task": "diarize",
    "text": "Hello there.",
    "language": "en",
    "duration": 2.5,
    "speakers": [{"speaker": "speaker_0", "speaking_time": 2.5}],
    "segments": [  # as stored while the domain segment carried the wire's type, and its words were not stored
        {"type": "transcript.text.segment", "id": 0, "start": 0.0, "end": 2.5, "text": " Hello there.",
         "speaker": "speaker_0"}
    ],
    "words": [{"word": " Hello", "start": 0.0, "end": 1.0, "prob": 0.9, "speaker": "speaker_0"}],
    "turns": [{"speaker": "speaker_0", "start": 0.0, "end": 2.5}],
}  # fmt: skip


def _job(job_id: str, request: dict[str, Any], **fields: Any) -> dict[str, Any]:
    request = {"source_path": f"/spool/{job_id}", "url": None, "options": {}, "diarization": None, **request}
    return {"job_id": job_id, "owner": "alice", "status": "complete", "created_at": CREATED, "completed_at": DONE,
            "progress": 1.0, "error": None, "audio_seconds": 2.5, "request": request, **fields}  # fmt: skip


OLD_ROWS = [
    # before the tracker kept domain results: a rendered body, and include_words for the granularities
    _job("rendered", {"response_format": "json", "include_words": False}, result={"text": "Hello there."}),
    _job(
        "queued-early",
        {"response_format": "verbose_json", "include_words": True},
        status="in_progress",
        completed_at=None,
        progress=0.0,
        result=None,
        audio_seconds=None,
    ),
    # domain results, granularities not kept yet
    _job(
        "words",
        {"response_format": "verbose_json", "include_words": True, "timestamp_granularities": []},
        transcript=TRANSCRIPT.model_dump(mode="json"),
        result=None,
    ),
    # the shape just before render specs: loose strings, and the legacy fields beside them
    _job(
        "sentences",
        {"response_format": "verbose_json", "timestamp_granularities": ["sentence"], "include_words": False},
        transcript=TRANSCRIPT.model_dump(mode="json"),
        result=None,
    ),
    _job(
        "diarized",
        {
            "response_format": "srt",
            "timestamp_granularities": ["segment"],
            "include_words": False,
            "diarization": {"num_speakers": None, "setting": "telephonic"},
        },
        transcript=DIARIZED,
        result=None,
    ),
]


def _write_rows(path: Path, records: list[dict[str, Any]]) -> None:
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,"
        " completed_at TEXT, record TEXT NOT NULL)"
    )
    connection.executemany(
        "INSERT INTO jobs VALUES (?, ?, ?, ?, ?)",
        [(r["job_id"], r["owner"], r["status"], r["completed_at"], json.dumps(r)) for r in records],
    )
    connection.commit()
    connection.close()


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    connection = sqlite3.connect(path)
    try:
        return {job_id: json.loads(record) for job_id, record in connection.execute("SELECT job_id, record FROM jobs")}
    finally:
        connection.close()


def test_old_job_records_are_rewritten_once_when_the_store_opens_and_render(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    _write_rows(path, OLD_ROWS)

    jobs = {job.job_id: job for job in SQLJobStore(path).load_all()}

    rows = _rows(path)
    assert set(rows) == set(jobs) == {"queued-early", "words", "sentences", "diarized"}  # a bare body expires
    for record in rows.values():  # the rows themselves are in the current shape, not only what load_all returns
        assert "result" not in record and "render" in record["request"]
        assert not {"response_format", "timestamp_granularities", "include_words"} & set(record["request"])
        assert "type" not in json.dumps(record.get("transcript"))

    word, segment, sentence = TimestampGranularity.word, TimestampGranularity.segment, TimestampGranularity.sentence
    render = {
        job_id: RenderSpec.model_validate(job.request.render) for job_id, job in jobs.items()
    }  # as the edge reads it
    assert render["queued-early"] == RenderSpec(
        response_format=ResponseFormat.verbose_json, timestamp_granularities=[word]
    )
    assert jobs["queued-early"].status == JobStatus.in_progress and jobs["queued-early"].transcript is None
    assert render["words"].timestamp_granularities == [word]
    assert render["sentences"].timestamp_granularities == [sentence]
    assert render["diarized"] == RenderSpec(response_format=ResponseFormat.srt, timestamp_granularities=[segment])
    assert jobs["diarized"].request.diarization is not None
    assert jobs["diarized"].request.diarization.setting is DiarizationSetting.telephonic

    def rendered(job_id: str) -> Any:
        job = jobs[job_id]
        assert job.transcript is not None
        return render_body(job.transcript, render[job_id].response_format, render[job_id].timestamp_granularities)

    assert rendered("words")["words"] == [{"word": "Hello", "start": 0.0, "end": 1.0, "prob": 0.9},
                                          {"word": "there.", "start": 1.2, "end": 2.5, "prob": 0.9}]  # fmt: skip
    assert "segments" in rendered("words")
    assert rendered("sentences")["sentences"] == [{"start": 0.0, "end": 2.5, "text": "Hello there."}]
    diarized = rendered("diarized")  # always the diarized object, typed segments and all
    assert diarized["segments"][0]["type"] == "transcript.text.segment" and diarized["words"][0]["word"] == "Hello"

    before = _rows(path)
    again = SQLJobStore(path).load_all()  # idempotent: a second open changes nothing
    assert _rows(path) == before and [job.job_id for job in again] == [job.job_id for job in jobs.values()]


def test_current_records_are_left_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    store = SQLJobStore(path)
    (job,) = [j for j in SQLJobStore(_with_old_rows(tmp_path / "old.sqlite3")).load_all() if j.job_id == "words"]
    store.save(job)
    before = _rows(path)
    assert [j.model_dump() for j in SQLJobStore(path).load_all()] == [job.model_dump()] and _rows(path) == before


def _with_old_rows(path: Path) -> Path:
    _write_rows(path, OLD_ROWS)
    return path
