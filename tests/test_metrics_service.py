"""The service's own metrics reach Ray's Prometheus endpoint and move with the work done: requests by route
and status, audio seconds by task and model, engine batches, chunks queued, jobs by state and their queue
wait, live sessions and diarization time."""

import time
from collections.abc import Callable

from devkit.prometheus import Samples, scrape, value
from tests.conftest import Service
from tests.test_jobs_service import _submit, _wait

WANTED_LABELS = {"route", "method", "status", "task", "model", "state", "deployment"}


def _scrape(service: Service) -> Samples:
    return scrape(service.process.metrics_url(), WANTED_LABELS)


_value = value


def _until(service: Service, condition: Callable[[Samples], bool], timeout_s: float = 30) -> Samples:
    deadline = time.monotonic() + timeout_s
    while True:
        samples = _scrape(service)
        if condition(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.5)


def test_metrics_move_with_requests_jobs_and_batches(service: Service, speech_wav: bytes) -> None:
    before = _scrape(service)
    with service.client() as client:
        answered = client.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)})
        missing = client.get("/v1/audio/transcriptions/async/no-such-job")
    assert answered.status_code == 200 and missing.status_code == 404
    job = _wait(service, _submit(service, speech_wav)["job_id"])
    assert job["status"] == "complete"

    sync_route = {"route": "/v1/audio/transcriptions", "method": "POST", "status": "200"}
    job_route = {"route": "/v1/audio/transcriptions/async/{job_id}", "method": "GET", "status": "404"}
    moved = {
        "sync requests": lambda s: _value(s, "ray_stt_http_requests_total", **sync_route),
        "404s by template": lambda s: _value(s, "ray_stt_http_requests_total", **job_route),
        "audio seconds": lambda s: _value(s, "ray_stt_audio_seconds_total", task="transcribe"),
        "batches": lambda s: _value(s, "ray_stt_batch_size_count"),
        "batch seconds": lambda s: _value(s, "ray_stt_batch_seconds_sum"),
        "queue waits": lambda s: _value(s, "ray_stt_job_queue_wait_seconds_count"),
        "completed jobs": lambda s: _value(s, "ray_stt_jobs", state="complete"),
    }

    def all_moved(samples: Samples) -> bool:
        return all(read(samples) > read(before) for read in moved.values())

    after = _until(service, all_moved)
    assert [name for name, read in moved.items() if read(after) <= read(before)] == []
    # two requests of 7 s of audio at least (the job's charge may be recorded a moment after its result)
    audio = _value(after, "ray_stt_audio_seconds_total", task="transcribe") - _value(
        before, "ray_stt_audio_seconds_total", task="transcribe"
    )
    assert audio >= 7.0
    assert ("ray_stt_chunks_queued", frozenset({("deployment", "Transcriber")})) in after
    assert not any("no-such-job" in dict(labels).get("route", "") for _, labels in after)  # templates only
