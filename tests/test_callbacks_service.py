"""Job callbacks end to end: the service POSTs a job's end to a real receiver on loopback (devkit's), signed,
retried through failures, and after a killed tracker and a restart of the whole application (with jobs in flight)."""

import json
import time

import httpx
import pytest

from devkit.callback_receiver import CallbackReceiver, Received, callback_receiver
from devkit.faults import kill
from devkit.jobs import JobClient, nothing_before_the_end
from serve_app.callbacks.signing import verify
from tests.conftest import CALLBACK_SECRET, Service

ASYNC = "/v1/audio/transcriptions/async"


def _submit(service: Service, data: bytes, **fields: str) -> str:
    with JobClient(service.base_url, service.api_key, timeout_s=300) as jobs:
        return jobs.submit(data, "speech.wav", **fields)["job_id"]


def _poll_until(service: Service, job_id: str, done, timeout_s: float = 240) -> dict:
    deadline = time.monotonic() + timeout_s
    with service.client() as client:
        while True:
            job = client.get(f"{ASYNC}/{job_id}").json()
            if done(job) or time.monotonic() > deadline:
                return job
            time.sleep(0.3)


def _delivered(job: dict) -> bool:
    return job.get("callback", {}).get("status") == "delivered"


def _check(received: Received, job_id: str) -> dict:
    assert received.path == "/hook" and received.headers["X-STT-Job-Id"] == job_id
    assert received.headers["Content-Type"] == "application/json"
    assert verify(CALLBACK_SECRET.encode(), received.body, received.headers["X-STT-Signature"], now=time.time())
    body: dict = json.loads(received.body)
    return body


def test_a_callback_is_retried_until_delivered_and_signed(service: Service, speech_wav: bytes) -> None:
    with callback_receiver() as receiver:
        receiver.fail_next(2)
        job_id = _submit(service, speech_wav, callback_url=receiver.url, response_format="verbose_json")
        requests = receiver.wait_for(3, timeout_s=240)
        assert len(requests) == 3
        assert [request.headers["X-STT-Job-Id"] for request in requests] == [job_id] * 3
        sent = _check(requests[2], job_id)
        assert not verify(b"a wrong secret", requests[2].body, requests[2].headers["X-STT-Signature"], time.time())
        assert sent["status"] == "complete" and "know you were there" in sent["result"]["text"].lower()
        assert sent["callback"] == {"status": "pending", "attempts": 2, "last_status": 500}
        polled = _poll_until(service, job_id, _delivered, timeout_s=30)
        assert polled["callback"] == {"status": "delivered", "attempts": 3, "last_status": 200}
        assert {**sent, "callback": None} == {**polled, "callback": None}  # the poll's answer
        time.sleep(2)
        assert len(receiver.requests) == 3  # delivered: sent no more


def test_a_failed_job_calls_back_too(service: Service) -> None:
    with callback_receiver() as receiver:
        job_id = _submit(service, b"this is not audio at all" * 64, callback_url=receiver.url)
        (received,) = receiver.wait_for(1, timeout_s=120)
        sent = _check(received, job_id)
        assert sent["status"] == "error" and sent["error"] and sent["result"] is None
        assert _delivered(_poll_until(service, job_id, _delivered, timeout_s=30))


def test_a_private_callback_url_is_a_400(service: Service, speech_wav: bytes) -> None:
    with service.client() as client:
        for url in ("http://10.0.0.7/hook", "http://169.254.169.254/latest", "http://[::ffff:192.168.1.1]/"):
            response = client.post(ASYNC, files={"file": ("a.wav", speech_wav)}, data={"callback_url": url})
            assert response.status_code == 400 and response.json()["detail"].startswith("callback_url: "), url
        synchronous = client.post(
            "/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)}, data={"callback_url": "http://x.org/"}
        )
        assert synchronous.status_code == 400 and "callback_url" in synchronous.json()["detail"]


@pytest.mark.slow
def test_jobs_and_a_callback_outlive_a_killed_tracker_and_a_restart(service: Service, speech_wav: bytes) -> None:
    """The receiver is down while the job ends, the tracker is killed and the application restarted (Ctrl-C
    `serve run` and its Ray, then start it again): the callback, stored with the job's end, is delivered once the
    receiver is back; jobs submitted just before the restart complete after it, and their inputs are gone.
    (One restart for both: each costs half a minute of the test loop.)"""
    receiver = CallbackReceiver().start()
    receiver.stop()  # down: connections refused, the port kept for it
    job_id = _submit(service, speech_wav, callback_url=receiver.url)
    ended = _poll_until(service, job_id, lambda job: job["callback"]["attempts"] >= 1)
    assert ended["status"] == "complete" and ended["callback"]["status"] == "pending"
    assert ended["callback"]["last_status"] is None  # no answer
    ids = [_submit(service, speech_wav) for _ in range(4)]
    assert kill(service.process, "JobTracker") == 1
    service.process.restart()
    with JobClient(service.base_url, service.api_key, timeout_s=300) as client:
        jobs = [client.wait(id_, 240, while_running=nothing_before_the_end) for id_ in ids]
    assert [job["status"] for job in jobs] == ["complete"] * 4
    assert not any((service.process.workdir / "state" / "spool").iterdir())  # every finished job's input is gone
    receiver.start()  # back, on the port it kept
    try:
        (received,) = receiver.wait_for(1, timeout_s=60)
        assert _check(received, job_id)["status"] == "complete"
        polled = _poll_until(service, job_id, _delivered, timeout_s=30)
        assert polled["callback"]["status"] == "delivered" and polled["callback"]["attempts"] >= 2
    finally:
        receiver.close()
    with httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {service.api_key}"}) as client:
        assert client.get("/v1/models").status_code == 200
