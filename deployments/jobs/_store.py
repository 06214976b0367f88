"""Durable job state. The tracker writes every change through a `JobStore`; SQLite (WAL) by default,
and a cluster can put an external database behind the same small interface."""

from pathlib import Path
from typing import Protocol

from deployments.errors import sqlite_storage
from deployments.jobs.records import Job
from deployments.storage.actors import connect_sqlite


class JobStore(Protocol):
    """Writes raise `deployments.errors.StorageError` when the storage refuses them."""

    def save(self, job: Job) -> None: ...
    def load_all(self) -> list[Job]: ...
    def delete(self, job_ids: list[str]) -> None: ...


class SQLiteJobStore:
    """One row per job: the record as JSON, with the columns queries need."""

    def __init__(self, path: str | Path) -> None:
        self.connection = connect_sqlite(path)
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,"
            " completed_at TEXT, record TEXT NOT NULL)"
        )

    def save(self, job: Job) -> None:
        """Raises StorageError when the disk refuses the write (full, read-only, I/O error)."""
        completed_at = job.completed_at.isoformat() if job.completed_at else None
        with sqlite_storage("the job store"):
            self.connection.execute(
                "INSERT OR REPLACE INTO jobs (job_id, owner, status, completed_at, record) VALUES (?, ?, ?, ?, ?)",
                (job.job_id, job.owner, job.status.value, completed_at, job.model_dump_json()),
            )

    def load_all(self) -> list[Job]:
        rows = self.connection.execute("SELECT record FROM jobs").fetchall()
        return [Job.model_validate_json(record) for (record,) in rows]

    def delete(self, job_ids: list[str]) -> None:
        with sqlite_storage("the job store"):
            self.connection.executemany("DELETE FROM jobs WHERE job_id = ?", [(job_id,) for job_id in job_ids])
