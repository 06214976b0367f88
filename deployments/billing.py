"""The usage ledger: what each API key has been charged, one row per completed request or job.

Charges are idempotent: each carries an id (the job id, or the synchronous request's id), and a charge
whose id is already in the ledger is not added again. So a call that Ray retries after an actor restart,
or a job that runs again after a crash between its charge and its completion record, is billed once.

A charge that the disk refuses (full, read-only) is kept in memory, counted in the key's usage, and written
at the next call once the disk takes it again: a full disk neither loses a charge nor fails the request
that made it.

The ledger runs as its own named, detached actor (`get_or_create_ledger`), shared by every ingress replica
and the job tracker; it shares the SQLite file with the job store (another table, another owner).
"""

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import ray

from deployments.config import JobsConfig
from deployments.detached import connect_sqlite, get_or_create
from deployments.errors import StorageError, sqlite_storage

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines


@dataclass(frozen=True)
class Charge:
    charge_id: str
    owner: str
    audio_seconds: float
    task: str
    created_at: float


class UsageLedger:
    def __init__(self, path: str | Path) -> None:
        self.pending: dict[str, Charge] = {}  # charges the disk refused so far, by id
        self.connection = connect_sqlite(path)
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY AUTOINCREMENT, charge_id TEXT UNIQUE NOT NULL,"
            " owner TEXT NOT NULL, audio_seconds REAL NOT NULL, task TEXT NOT NULL, created_at REAL NOT NULL)"
        )
        self.connection.execute("CREATE INDEX IF NOT EXISTS charges_by_owner ON charges (owner, id)")
        self._migrate_usage_totals()

    def charge(self, charge_id: str, owner: str, audio_seconds: float, task: str = "transcribe") -> bool:
        """Record a charge; False (and nothing recorded) when `charge_id` was charged before."""
        self.flush()
        if charge_id in self.pending or self._recorded(charge_id):
            return False
        self.pending[charge_id] = Charge(charge_id, owner, audio_seconds, task, time.time())
        self.flush()
        return True

    def usage(self, owner: str) -> float:
        """Audio seconds charged to `owner` in all, charges still waiting for the disk included."""
        self.flush()
        (total,) = self.connection.execute(
            "SELECT COALESCE(SUM(audio_seconds), 0) FROM charges WHERE owner = ?", (owner,)
        ).fetchone()
        return float(total) + sum(charge.audio_seconds for charge in self.pending.values() if charge.owner == owner)

    def flush(self) -> None:
        """Write the charges that wait for the disk; stop at the first refusal (they wait on)."""
        for charge_id, charge in list(self.pending.items()):
            try:
                with sqlite_storage("the usage ledger"):
                    self.connection.execute(
                        "INSERT OR IGNORE INTO charges (charge_id, owner, audio_seconds, task, created_at)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (charge.charge_id, charge.owner, charge.audio_seconds, charge.task, charge.created_at),
                    )
            except StorageError as error:
                logger.warning("%d charges wait for the disk: %s", len(self.pending), error)
                return
            del self.pending[charge_id]

    def _recorded(self, charge_id: str) -> bool:
        return self.connection.execute("SELECT 1 FROM charges WHERE charge_id = ?", (charge_id,)).fetchone() is not None

    def _migrate_usage_totals(self) -> None:
        """Earlier versions kept one running total per key in a `usage` table: it becomes one charge each."""
        if not self.connection.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='usage'").fetchone():
            return
        with self.connection:
            self.connection.execute("BEGIN IMMEDIATE")
            for owner, seconds in self.connection.execute("SELECT owner, audio_seconds FROM usage").fetchall():
                self.connection.execute(
                    "INSERT OR IGNORE INTO charges (charge_id, owner, audio_seconds, task, created_at)"
                    " VALUES (?, ?, ?, 'migrated', ?)",
                    (f"usage-total:{owner}", owner, seconds, time.time()),
                )
            self.connection.execute("DROP TABLE usage")
        logger.info("moved per-key usage totals into the charges ledger")


def get_or_create_ledger(config: JobsConfig) -> ray.actor.ActorHandle:
    """The cluster's one ledger, shared by the ingress replicas and the tracker."""
    return get_or_create(UsageLedger, "UsageLedger", config.tracker_namespace, config.database_path)
