"""Asynchronous jobs end to end over HTTP, including a killed tracker and a killed Transcriber replica (a restart of
the whole application with jobs in flight: tests/test_callbacks_service.py)."""

import sqlite3
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import httpx
import numpy as np
import pytest
import srt

from deployments.files.decoding import decode_audio
from deployments.types import SAMPLE_RATE
from devkit.faults import kill
from devkit.jobs import JobClient, nothing_before_the_end
from devkit.media import encode, pyannote_sample
from tests.conftest import API_KEYS, JOBS_CONFIG, Service

ASYNC = "/v1/audio/transcriptions/async"


def _jobs(service: Service, api_key: str | None) -> JobClient:
    return JobClient(service.base_url, service.api_key if api_key is None else api_key, timeout_s=300)


def _submit(service: Service, data: bytes, api_key: str | None = None, **fields) -> dict:
    with _jobs(service, api_key) as jobs:
        return jobs.submit(data, "speech.wav", **fields)


def _wait(service: Service, job_id: str, api_key: str | None = None, timeout_s: float = 240) -> dict:
    with _jobs(service, api_key) as jobs:
        job = jobs.wait(job_id, timeout_s, while_running=nothing_before_the_end)
    assert job["status"] != "in_progress", f"job {job_id} still in progress after {timeout_s} s"
    return job


def _progress(client: httpx.Client, job_id: str) -> float:
    response = client.get(f"{ASYNC}/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()["progress"]


def test_submission_returns_at_once_with_a_uuid_and_offset_timestamp(service: Service, speech_wav: bytes) -> None:
    started = time.monotonic()
    created = _submit(service, speech_wav)
    assert time.monotonic() - started < 5  # no decoding or inference before the answer
    assert set(created) == {"job_id", "status", "created_at"}
    assert created["status"] == "in_progress"
    assert uuid.UUID(created["job_id"])
    assert created["created_at"].endswith("+00:00")
    assert datetime.fromisoformat(created["created_at"]).utcoffset() == timedelta(0)
    assert _wait(service, created["job_id"])["status"] == "complete"


def test_progress_rises_chunk_by_chunk_to_1(service: Service) -> None:
    """Ten utterances more than a chunk's longest stretch (60 s) apart are ten chunks, more than one batch
    (8): progress is seen part-way. (Short utterances keep each chunk cheap to decode; the silence between
    chunks is skipped.)"""
    samples = decode_audio(pyannote_sample()).samples
    utterance = samples[int(10.5 * SAMPLE_RATE) : int(13.5 * SAMPLE_RATE)]
    # A room's noise floor between them: Silero VAD misses speech after a minute of exact digital zeros.
    quiet = np.random.default_rng(0).standard_normal(61 * SAMPLE_RATE).astype(np.float32) * 1e-4
    piece = np.concatenate([utterance, quiet])
    job_id = _submit(service, encode(np.tile(piece, 10), "flac"), response_format="verbose_json")["job_id"]
    seen: list[float] = []
    deadline = time.monotonic() + 240
    with service.client() as client:
        while time.monotonic() < deadline:
            job = client.get(f"{ASYNC}/{job_id}").json()
            seen.append(job["progress"])
            if job["status"] != "in_progress":
                break
            time.sleep(0.1)
    assert job["status"] == "complete" and seen[-1] == 1.0
    assert seen == sorted(seen)  # never goes backwards
    assert any(0.0 < share < 1.0 for share in seen), seen
    assert job["result"]["duration"] == pytest.approx(10 * 64.0, abs=0.1)
    assert job["result"]["segments"][-1]["end"] > 9 * 64  # times run across the whole file, not per chunk


def test_url_jobs_complete_fail_with_the_reason_or_are_refused_at_once(service: Service, media_url: str) -> None:
    with service.client() as client:
        good = client.post(ASYNC, data={"url": f"{media_url}/speech.mp3", "response_format": "text"}).json()
        missing = client.post(ASYNC, data={"url": f"{media_url}/missing"}).json()
        private = client.post(ASYNC, data={"url": "http://10.0.0.1/a.mp3"})
    assert private.status_code == 400 and "non-public address" in private.json()["detail"]  # refused at once
    assert "hello" in _wait(service, good["job_id"])["result"].lower()
    job = _wait(service, missing["job_id"])
    assert job["status"] == "error" and "HTTP 404" in job["error"]


def test_every_response_format_as_a_job(service: Service, speech_wav: bytes) -> None:
    formats = {
        "json": {},
        "verbose_json": {"timestamp_granularities[]": "word"},
        "text": {},
        "srt": {},
        "vtt": {},
    }
    ids = {
        name: _submit(service, speech_wav, response_format=name, **extra)["job_id"] for name, extra in formats.items()
    }
    jobs = {name: _wait(service, job_id) for name, job_id in ids.items()}
    for job in jobs.values():
        assert job["status"] == "complete" and job["error"] is None and job["progress"] == 1.0
        assert datetime.fromisoformat(job["completed_at"]) >= datetime.fromisoformat(job["created_at"])
    assert "know you were there" in jobs["json"]["result"]["text"].lower()
    verbose = jobs["verbose_json"]["result"]
    assert verbose["language"] == "english" and verbose["segments"] and verbose["words"]
    assert "know you were there" in jobs["text"]["result"].lower()
    assert next(iter(srt.parse(jobs["srt"]["result"]))).index == 1
    assert jobs["vtt"]["result"].startswith("WEBVTT")


def test_undecodable_audio_ends_in_error_with_the_reason(service: Service) -> None:
    job = _wait(service, _submit(service, b"definitely not audio" * 50)["job_id"])
    assert job["status"] == "error"
    assert job["error"].startswith("audio processing failed")
    assert job["result"] is None and job["completed_at"] is not None


def test_unknown_and_foreign_jobs_are_not_found(service: Service, speech_wav: bytes) -> None:
    job_id = _submit(service, speech_wav)["job_id"]
    with service.client(api_key=API_KEYS[1]) as other:
        assert other.get(f"{ASYNC}/{job_id}").json() == {"detail": "Job not found"}
        assert other.get(f"{ASYNC}/{job_id}").status_code == 404
    with service.client() as client:
        assert client.get(f"{ASYNC}/{uuid.uuid4()}").status_code == 404
        assert client.get(f"{ASYNC}/not-a-uuid").json() == {"detail": "Job not found"}
    _wait(service, job_id)


def test_async_validation_matches_the_synchronous_endpoint(service: Service, speech_wav: bytes) -> None:
    with service.client() as client:
        assert client.post(ASYNC, data={"model": "whisper-1"}).status_code == 422
        bad_format = client.post(ASYNC, files={"file": ("a.wav", speech_wav)}, data={"response_format": "doc"})
        assert bad_format.status_code == 422
        empty = client.post(ASYNC, files={"file": ("a.wav", b"")})
        assert empty.status_code == 400 and empty.json() == {"detail": "the uploaded file is empty"}
    with service.client(api_key="nope") as client:
        assert client.post(ASYNC, files={"file": ("a.wav", speech_wav)}).status_code == 401
        assert client.get(f"{ASYNC}/{uuid.uuid4()}").status_code == 401


def test_running_job_cap_per_key_answers_429(service: Service) -> None:
    """The test config caps each key at 6 running jobs, 2 of them at once. One more than the cap is sent
    all at once, so that none can finish in between (a short job's chunk may go ahead of others' queued
    chunks, and one sent after the others could find a place freed): exactly one is refused."""
    long_clip = encode(decode_audio(pyannote_sample()).samples[: 12 * 16_000], "flac")
    cap = JOBS_CONFIG["max_running_jobs_per_key"]

    def submit(_: int) -> httpx.Response:
        with service.client(api_key=API_KEYS[1]) as client:
            return client.post(ASYNC, files={"file": ("a.wav", long_clip)})

    with ThreadPoolExecutor(max_workers=cap + 1) as pool:
        responses = list(pool.map(submit, range(cap + 1)))
    assert sorted(response.status_code for response in responses) == [200] * cap + [429]
    refused = next(response for response in responses if response.status_code == 429)
    assert "wait for current jobs" in refused.json()["detail"]
    ids = [response.json()["job_id"] for response in responses if response.status_code == 200]
    for job_id in ids:
        assert _wait(service, job_id, api_key=API_KEYS[1])["status"] == "complete"


@pytest.mark.slow
def test_jobs_survive_a_killed_tracker(service: Service, speech_wav: bytes) -> None:
    ids = [_submit(service, speech_wav)["job_id"] for _ in range(4)]
    assert kill(service.process, "JobTracker") == 1  # SIGKILL of its process: Ray restarts the actor
    jobs = [_wait(service, job_id) for job_id in ids]
    assert [job["status"] for job in jobs] == ["complete"] * 4
    assert all("know you were there" in job["result"]["text"].lower() for job in jobs)


@pytest.mark.slow
def test_jobs_survive_a_killed_transcriber_replica_and_are_charged_once(service: Service) -> None:
    """SIGKILL of the Transcriber's process while every job has chunks in flight: the chunks are sent again
    to the replica Serve starts in its place, and no job ends in error (scripts/chaos.py does every kind)."""
    minute = encode(np.tile(decode_audio(pyannote_sample()).samples, 2), "flac")
    ids = [_submit(service, minute, api_key=API_KEYS[1])["job_id"] for _ in range(3)]
    with service.client(api_key=API_KEYS[1]) as client:
        deadline = time.monotonic() + 60
        while not any(_progress(client, job_id) > 0 for job_id in ids):
            assert time.monotonic() < deadline
            time.sleep(0.5)  # three polls a round: within the key's 10 requests per second
    assert kill(service.process, "Transcriber") == 1
    jobs = [_wait(service, job_id, api_key=API_KEYS[1]) for job_id in ids]
    assert [job["status"] for job in jobs] == ["complete"] * 3
    assert all("know you were there" in job["result"]["text"].lower() for job in jobs)
    with sqlite3.connect(service.state_dir / "jobs.sqlite3") as db:
        charges = db.execute(f"SELECT charge_id FROM charges WHERE charge_id IN ({','.join('?' * 3)})", ids).fetchall()
    assert sorted(charge for (charge,) in charges) == sorted(ids)  # one charge each (charge ids are unique)


@pytest.fixture(autouse=True)
def _no_leftover_uploads(service: Service):
    yield
    spool = service.process.workdir / "state" / "spool"
    deadline = time.monotonic() + 60
    while spool.exists() and any(spool.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.5)  # a test's jobs may still be finishing
    assert not spool.exists() or not any(spool.iterdir())


def test_service_keeps_answering_synchronously_after_the_faults(service: Service, speech_wav: bytes) -> None:
    with service.client() as client:
        response = client.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)})
    assert response.status_code == 200
    assert "know you were there" in response.json()["text"].lower()
