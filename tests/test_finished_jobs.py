"""Poll answers of finished jobs kept by an ingress replica: per owner, until the job expires, bounded."""

import asyncio
import time
from datetime import UTC, datetime, timedelta

from deployments.jobs.records import JobStatus
from serve_app.common.finished_jobs import FinishedJobs
from tests.fakes import Remote
from tests.inprocess import BROKE_KEY, call
from tests.test_http import AUDIO, ROUTES


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_an_answer_is_kept_for_its_owner_until_the_job_expires() -> None:
    clock = Clock()
    finished = FinishedJobs(clock=clock)
    finished.keep("job", "alice", b"{}", clock.now + timedelta(hours=12))
    assert finished.get("job", "alice") == b"{}"
    assert finished.get("job", "mallory") is None  # another key asks the tracker, which answers 404
    clock.now += timedelta(hours=12)
    assert finished.get("job", "alice") is None  # expired: the tracker is asked again, and forgets it


def test_answers_are_bounded_in_bytes_least_recently_polled_out_first() -> None:
    finished = FinishedJobs(max_bytes=800, clock=Clock())
    later = datetime(2027, 1, 1, tzinfo=UTC)
    for name in "abcd":
        finished.keep(name, "alice", b"x" * 100, later)
    finished.get("a", "alice")
    for name in "efghi":
        finished.keep(name, "alice", b"x" * 100, later)
    assert finished.get("b", "alice") is None and finished.get("a", "alice") is not None
    finished.keep("big", "alice", b"x" * 101, later)  # over an eighth of the budget: never kept
    assert finished.get("big", "alice") is None


def test_a_finished_jobs_polls_are_answered_without_the_tracker(inprocess) -> None:
    asked, read = [], []
    tracker_get = inprocess.tracker.get

    def counted_tracker_get(*args: object):
        asked.append(args)
        return Remote(tracker_get).remote(*args)

    inprocess.tracker.get = counted_tracker_get
    reader = inprocess.services.jobs
    reader_get = reader.get

    def counted_reader_get(*args: object):
        read.append(args)
        return reader_get(*args)

    reader.get = counted_reader_get
    job_id = call(inprocess, "POST", ROUTES[1], files=AUDIO, data={"response_format": "srt"}).json()["job_id"]
    for _ in range(100):
        first = call(inprocess, "GET", f"{ROUTES[1]}/{job_id}")
        if first.json()["status"] != "in_progress":
            break
    polls = len(read)
    again = call(inprocess, "GET", f"{ROUTES[1]}/{job_id}")
    assert again.status_code == 200 and again.content == first.content and len(read) == polls  # kept: no read
    assert again.headers["content-type"] == first.headers["content-type"] == "application/json"
    assert call(inprocess, "GET", f"{ROUTES[1]}/{job_id}", key=BROKE_KEY).status_code == 404  # another key's job
    assert len(read) == polls + 1
    assert asked == []  # polls read the store: the tracker is never asked


class DeadTracker:
    """The tracker's actor while Ray restarts it: every call fails."""

    def __getattr__(self, name: str) -> object:
        raise RuntimeError("the JobTracker actor is dead")


def test_polls_are_answered_from_the_store_while_the_tracker_is_down(inprocess) -> None:
    inprocess.pipeline.gate = gate = asyncio.Event()
    running = call(inprocess, "POST", ROUTES[1], files=AUDIO, data={"response_format": "text"}).json()["job_id"]
    _until(inprocess, lambda: inprocess.tracker.book.find(running).progress == 0.5)
    inprocess.services.tracker._target = DeadTracker()  # polls from here on cannot reach it
    answer = call(inprocess, "GET", f"{ROUTES[1]}/{running}")
    assert answer.status_code == 200 and answer.json()["status"] == "in_progress"
    assert answer.json()["progress"] == 0.5  # as the tracker stored it

    gate.set()  # the job finishes; no poll has seen it finished, so no replica keeps its answer
    _until(inprocess, lambda: inprocess.tracker.book.find(running).status != JobStatus.in_progress)
    started = time.monotonic()
    answer = call(inprocess, "GET", f"{ROUTES[1]}/{running}")
    assert answer.status_code == 200 and answer.json()["status"] == "complete", answer.text
    assert answer.json()["result"] == "Hello there." and time.monotonic() - started < 1.0
    assert call(inprocess, "GET", f"{ROUTES[1]}/{running}", key=BROKE_KEY).status_code == 404


def _until(inprocess, condition) -> None:
    for _ in range(300):
        if condition():
            return
        inprocess.loop.run_until_complete(asyncio.sleep(0.01))
    raise AssertionError("the condition did not hold in 3 s")
