"""Poll answers for finished jobs, kept by each ingress replica so that polling a finished job again costs no
read of the store and no new rendering.

A job that is complete or failed never changes again until its retention period ends, so its answer can be
kept: per (job id, owner) as the store answered that owner, until `completed_at + retention_s`; after that
the store is read again (the job is expired, and the poll gets 404). Jobs still running are always read from
the store. Bounded in bytes, the least recently polled answer leaves first.
"""

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

DEFAULT_MAX_BYTES = 32 * 1024**2


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class _Answer:
    body: bytes
    expires_at: datetime


class FinishedJobs:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, clock: Callable[[], datetime] = utc_now) -> None:
        self.max_bytes = max_bytes
        self.clock = clock
        self._answers: OrderedDict[tuple[str, str], _Answer] = OrderedDict()
        self._bytes = 0

    def get(self, job_id: str, owner: str) -> bytes | None:
        """The kept answer to `owner`'s poll of `job_id`, unless there is none or the job has expired."""
        key = (job_id, owner)
        answer = self._answers.get(key)
        if answer is None:
            return None
        if self.clock() >= answer.expires_at:
            self._drop(key)
            return None
        self._answers.move_to_end(key)
        return answer.body

    def keep(self, job_id: str, owner: str, body: bytes, expires_at: datetime) -> None:
        """Keep a finished job's answer; one larger than an eighth of the budget is rendered at each poll."""
        if len(body) > self.max_bytes // 8:
            return
        key = (job_id, owner)
        self._drop(key)
        while self._answers and self._bytes + len(body) > self.max_bytes:
            self._drop(next(iter(self._answers)))
        self._answers[key] = _Answer(body, expires_at)
        self._bytes += len(body)

    def _drop(self, key: tuple[str, str]) -> None:
        answer = self._answers.pop(key, None)
        if answer is not None:
            self._bytes -= len(answer.body)
