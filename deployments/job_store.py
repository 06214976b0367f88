"""Durable job state. The tracker writes every change through a `JobStore`; SQLite (WAL) by default,
and a cluster can put an external database behind the same small interface."""

import sqlite3
from pathlib import Path
from typing import Protocol

from deployments.jobs import Job


class JobStore(Protocol):
    def save(self, job: Job, charge_seconds: float = 0.0) -> None:
        """Write the job; with `charge_seconds`, add them to its owner's usage in the same transaction."""

    def load_all(self) -> list[Job]: ...
    def delete(self, job_ids: list[str]) -> None: ...
    def usage(self, owner: str) -> float: ...
    def charge(self, owner: str, audio_seconds: float) -> None: ...


class SQLiteJobStore:
    """One row per job (the record as JSON, with the columns queries need) and one per key's usage."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=FULL")
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,"
            " completed_at TEXT, record TEXT NOT NULL)"
        )
        self.connection.execute("CREATE TABLE IF NOT EXISTS usage (owner TEXT PRIMARY KEY, audio_seconds REAL)")

    def save(self, job: Job, charge_seconds: float = 0.0) -> None:
        completed_at = job.completed_at.isoformat() if job.completed_at else None
        with self.connection:  # one transaction: a job is never complete without its charge, or charged twice
            self.connection.execute("BEGIN IMMEDIATE")
            self.connection.execute(
                "INSERT OR REPLACE INTO jobs (job_id, owner, status, completed_at, record) VALUES (?, ?, ?, ?, ?)",
                (job.job_id, job.owner, job.status.value, completed_at, job.model_dump_json()),
            )
            if charge_seconds:
                self._add_usage(job.owner, charge_seconds)

    def charge(self, owner: str, audio_seconds: float) -> None:
        with self.connection:
            self.connection.execute("BEGIN IMMEDIATE")
            self._add_usage(owner, audio_seconds)

    def _add_usage(self, owner: str, audio_seconds: float) -> None:
        self.connection.execute(
            "INSERT INTO usage (owner, audio_seconds) VALUES (?, ?)"
            " ON CONFLICT(owner) DO UPDATE SET audio_seconds = audio_seconds + excluded.audio_seconds",
            (owner, audio_seconds),
        )

    def load_all(self) -> list[Job]:
        rows = self.connection.execute("SELECT record FROM jobs").fetchall()
        return [Job.model_validate_json(record) for (record,) in rows]

    def delete(self, job_ids: list[str]) -> None:
        self.connection.executemany("DELETE FROM jobs WHERE job_id = ?", [(job_id,) for job_id in job_ids])

    def usage(self, owner: str) -> float:
        row = self.connection.execute("SELECT audio_seconds FROM usage WHERE owner = ?", (owner,)).fetchone()
        return row[0] if row else 0.0
