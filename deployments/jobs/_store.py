"""Durable job state. The tracker writes every change through a `JobStore`; SQLite (WAL) by default,
and a cluster can put an external database behind the same small interface."""

import json
import logging
from pathlib import Path
from typing import Protocol

from deployments.errors import StorageError, sqlite_storage
from deployments.jobs._migrations import current_record, is_current
from deployments.jobs.records import Job
from deployments.storage.actors import connect_sqlite

logger = logging.getLogger("ray.serve")  # where Ray shows an actor's log lines


class JobStore(Protocol):
    """Writes raise `deployments.errors.StorageError` when the storage refuses them. `load_all` gives jobs in
    the current shape: a store brings records of earlier versions into it (deployments/jobs/_migrations.py)."""

    def save(self, job: Job) -> None: ...
    def load_all(self) -> list[Job]: ...
    def delete(self, job_ids: list[str]) -> None: ...


class SQLiteJobStore:
    """One row per job: the record as JSON, with the columns queries need. Opening it rewrites the rows of
    earlier versions into the current shape, once."""

    def __init__(self, path: str | Path) -> None:
        self.connection = connect_sqlite(path)
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,"
            " completed_at TEXT, record TEXT NOT NULL)"
        )
        self.migrate()

    def migrate(self) -> None:
        """Rewrite rows stored by earlier versions; rows of the current shape are left as they are. When the
        storage refuses the writes, `load_all` reads those rows migrated all the same, and the next open
        tries again."""
        rows = self.connection.execute("SELECT job_id, record FROM jobs").fetchall()
        rewritten: list[tuple[str, str]] = []
        expired: list[tuple[str]] = []
        for job_id, text in rows:
            record = json.loads(text)
            if is_current(record):
                continue
            current = current_record(record)
            if current is None:
                expired.append((job_id,))
            else:
                rewritten.append((Job.model_validate(current).model_dump_json(), job_id))
        if not rewritten and not expired:
            return
        try:
            with sqlite_storage("the job store"), self.connection:  # one transaction: all rewritten, or none
                self.connection.execute("BEGIN IMMEDIATE")
                self.connection.executemany("UPDATE jobs SET record = ? WHERE job_id = ?", rewritten)
                self.connection.executemany("DELETE FROM jobs WHERE job_id = ?", expired)
        except StorageError as error:
            logger.warning("job store: %d records of earlier versions are read migrated but stay as they are"
                           " until the next start: %s", len(rewritten) + len(expired), error)  # fmt: skip
            return
        logger.info("job store: %d jobs stored by earlier versions rewritten in the current shape; %d holding only a"
                    " result rendered by them expired", len(rewritten), len(expired))  # fmt: skip

    def save(self, job: Job) -> None:
        """Raises StorageError when the disk refuses the write (full, read-only, I/O error)."""
        completed_at = job.completed_at.isoformat() if job.completed_at else None
        with sqlite_storage("the job store"):
            self.connection.execute(
                "INSERT OR REPLACE INTO jobs (job_id, owner, status, completed_at, record) VALUES (?, ?, ?, ?, ?)",
                (job.job_id, job.owner, job.status.value, completed_at, job.model_dump_json()),
            )

    def load_all(self) -> list[Job]:
        records = (
            current_record(json.loads(record)) for (record,) in self.connection.execute("SELECT record FROM jobs")
        )
        return [Job.model_validate(record) for record in records if record is not None]

    def delete(self, job_ids: list[str]) -> None:
        with sqlite_storage("the job store"):
            self.connection.executemany("DELETE FROM jobs WHERE job_id = ?", [(job_id,) for job_id in job_ids])
