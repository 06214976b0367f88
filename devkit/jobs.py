"""Submit audio as asynchronous jobs and poll them to their end: the one job client of tests and scripts. It is
the `stt` CLI's own API client (stt_cli.api) underneath, so that tools and users reach the service the same way.

Polls tolerate a service that cannot answer for a while (a killed ingress, a restart, a rate limit): such a
poll is None, and waiting goes on until the deadline."""

import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import httpx

from stt_cli.api import ApiError, SttApi, Upload

Job = dict[str, Any]
"""A job as the service answers a poll: job_id, status, progress, result, error, ..."""

LOST: Job = {"status": "lost"}
"""What a poll of a job the service does not know (404) returns."""


class JobClient:
    """Jobs under one API key."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = 120) -> None:
        self.api = SttApi(base_url, api_key, timeout_s)

    def __enter__(self) -> "JobClient":
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.api.http.close()

    def submit(self, audio: bytes | str, filename: str = "speech.wav", **form: str) -> Job:
        """A job for audio in memory (uploaded as `filename`) or a URL (fetched by the service): the service's
        answer (job_id, status, created_at). Raises ApiError for an answer other than 2xx."""
        source = Upload(filename, audio) if isinstance(audio, bytes) else audio
        return self.api.submit_json(source, form)

    def poll(self, job_id: str) -> Job | None:
        """The job; LOST when the service does not know it; None while the service cannot answer."""
        try:
            return self.api.job_json(job_id)
        except ApiError as error:
            return dict(LOST) if error.status == 404 else None
        except httpx.HTTPError:
            return None

    def wait(
        self,
        job_id: str,
        timeout_s: float = 240,
        interval_s: float = 0.3,
        while_running: Callable[[Job], object] | None = None,
    ) -> Job:
        """Poll until the job is no longer in progress, at least once: the job as last answered, so still
        `in_progress` if the deadline came first. `while_running` sees each answer while it is in progress."""
        deadline = time.monotonic() + timeout_s
        job: Job = {"job_id": job_id, "status": "in_progress"}
        while True:
            polled = self.poll(job_id)
            if polled is not None:
                job = polled
                if job["status"] != "in_progress":
                    return job
                if while_running is not None:
                    while_running(job)
            if time.monotonic() >= deadline:
                return job
            time.sleep(interval_s)

    def wait_for_all(self, job_ids: list[str], timeout_s: float, interval_s: float = 0.5) -> dict[str, str]:
        """Each job's final status, polling them in turn: `lost` for a job unknown to the service or still in
        progress at the deadline."""
        deadline = time.monotonic() + timeout_s
        states = dict.fromkeys(job_ids, "in_progress")
        while time.monotonic() < deadline and "in_progress" in states.values():
            for job_id in [job_id for job_id, state in states.items() if state == "in_progress"]:
                if (job := self.poll(job_id)) is not None:
                    states[job_id] = job["status"]
            time.sleep(interval_s)
        return {job_id: "lost" if state == "in_progress" else state for job_id, state in states.items()}


def nothing_before_the_end(job: Job) -> None:
    """A `while_running` check: a job in progress shows no result, end or error yet."""
    assert job["result"] is None and job["completed_at"] is None and job["error"] is None
