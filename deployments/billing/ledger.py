"""The usage ledger: what each API key has been charged, one row per completed request or job.

Charges are idempotent: each carries an id (the job id, or the synchronous request's id), and a charge
whose id is already in the ledger is not added again. So a call that Ray retries after an actor restart,
or a job that runs again after a crash between its charge and its completion record, is billed once.

A charge that the storage refuses (disk full, read-only, database unreachable) is kept in memory, counted in
the key's usage, and written at the next call once the storage takes it again: a full disk neither loses a
charge nor fails the request that made it.

Each charge also records what a usage statement shows (`GET /v1/billing/usage`): its cost at the key's
price when it was made, the input's size, the model id, the language and the options that cost extra.
Rows written before costs were recorded have none (cost NULL): balances price them at the key's rate.

The ledger runs as its own named, detached actor (`get_or_create_ledger`), shared by every ingress replica
and the job tracker; it shares the database with the job store (another table, another owner): a SQLite
file, or PostgreSQL on a cluster (deployments/storage/database.py), where the tracker and the ledger may run
on two nodes.
"""

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from ray.actor import ActorProxy
from sqlalchemy import func, select

from deployments.config import StorageConfig
from deployments.errors import StorageError
from deployments.metrics import UsageMetrics
from deployments.storage.actors import get_or_create
from deployments.storage.database import (
    charges,
    database_engine,
    database_storage,
    insert_ignoring_duplicates,
    migrate_schema,
    writing,
)
from deployments.types import Analysis

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines


class ChargeDetails(BaseModel):
    """What a charge records besides who and how long: set by whoever knows it when the work is accepted."""

    task: str = "transcribe"
    model: str | None = None
    language: str | None = None
    bytes: int = Field(0, ge=0, description="Size of the input as received (upload or fetched URL).")
    rate_per_min: float | None = Field(None, ge=0, description="The key's price per audio minute; None: no cost.")
    profanity_filter: bool = False
    llm_price_per_1k_tokens: float | None = Field(None, ge=0, description="The price of 1000 LLM tokens (in + out).")
    emotions_rate_per_min: float | None = Field(None, ge=0, description="The surcharge per audio minute for emotions.")
    role_tagging: bool = Field(False, description="Speakers were given roles.")
    emotions: bool = Field(False, description="At least one emotion was returned (asked for and none: False).")
    llm_input_tokens: int | None = Field(None, ge=0, description="Set when an LLM analysis ran.")
    llm_output_tokens: int | None = Field(None, ge=0)

    def analyzed(self, analysis: Analysis | None) -> "ChargeDetails":
        """These details with what an analysis used and returned (unchanged without one)."""
        if analysis is None:
            return self
        return self.model_copy(
            update={
                "role_tagging": bool(analysis.roles),
                "emotions": any(emotion is not None for emotion in analysis.emotions),
                "llm_input_tokens": analysis.llm_input_tokens,
                "llm_output_tokens": analysis.llm_output_tokens,
            }
        )

    def completed(self, language: str, source_path: str | Path) -> "ChargeDetails":
        """These details with what is known once the work is done: the language heard, and the size of the
        spooled input (0 when it is gone already)."""
        try:
            size = os.path.getsize(source_path)
        except OSError:
            size = 0
        return self.model_copy(update={"language": language, "bytes": size})


class UsageRow(BaseModel):
    """One charge as a usage statement lists it (newest first, keyed by `row_id`)."""

    row_id: int
    charge_id: str
    created_at: float
    audio_seconds: float
    task: str
    model: str | None
    language: str | None
    bytes: int
    cost: float | None
    profanity_filter: bool
    role_tagging: bool
    emotions: bool
    llm_input_tokens: int | None
    llm_output_tokens: int | None


@dataclass(frozen=True)
class Charge:
    charge_id: str
    owner: str
    audio_seconds: float
    details: ChargeDetails
    created_at: float

    @property
    def cost(self) -> float | None:
        """The audio at the key's rate, plus the LLM's tokens and the emotions surcharge where they apply."""
        details, minutes = self.details, self.audio_seconds / 60
        if details.rate_per_min is None:
            return None
        tokens = (details.llm_input_tokens or 0) + (details.llm_output_tokens or 0)
        llm = tokens / 1000 * (details.llm_price_per_1k_tokens or 0.0)
        emotions = minutes * (details.emotions_rate_per_min or 0.0) if details.emotions else 0.0
        return minutes * details.rate_per_min + llm + emotions

    def cost_or_priced_at(self, rate_per_min: float) -> float:
        """Its cost, or, for a charge recorded without one, its audio priced at `rate_per_min`."""
        return self.cost if self.cost is not None else self.audio_seconds / 60 * rate_per_min


class UsageLedger:
    """`database` is the storage settings (their database), a SQLite file's path or a PostgreSQL URL."""

    def __init__(self, database: StorageConfig | str | Path) -> None:
        self.pending: dict[str, Charge] = {}  # charges the storage refused so far, by id
        self.metrics = UsageMetrics()
        self.engine = database_engine(database)
        migrate_schema(self.engine)

    def charge(self, charge_id: str, owner: str, audio_seconds: float, details: ChargeDetails | None = None) -> bool:
        """Record a charge; False (and nothing recorded) when `charge_id` was charged before. The row's unique
        charge id holds that in the database too, whoever else writes to it."""
        self.flush()
        if charge_id in self.pending or self._recorded(charge_id):
            return False
        details = details or ChargeDetails()
        self.pending[charge_id] = Charge(charge_id, owner, audio_seconds, details, time.time())
        self.flush()
        if audio_seconds > 0:
            self.metrics.audio_seconds.inc(audio_seconds, tags={"task": details.task, "model": details.model or "-"})
        return True

    def usage(self, owner: str) -> float:
        """Audio seconds charged to `owner` in all, charges still waiting for the storage included."""
        self.flush()
        query = select(func.coalesce(func.sum(charges.c.audio_seconds), 0.0)).where(charges.c.owner == owner)
        with self.engine.connect() as connection:
            total = connection.scalar(query)
        waiting = sum(charge.audio_seconds for charge in self.pending.values() if charge.owner == owner)
        return float(total or 0.0) + waiting

    def spent(self, owner: str, rate_per_min: float) -> float:
        """Money charged to `owner` in all; charges recorded without a cost are priced at `rate_per_min`."""
        self.flush()
        priced = func.coalesce(charges.c.cost, charges.c.audio_seconds / 60.0 * rate_per_min)
        query = select(func.coalesce(func.sum(priced), 0.0)).where(charges.c.owner == owner)
        with self.engine.connect() as connection:
            total = connection.scalar(query)
        waiting = [charge for charge in self.pending.values() if charge.owner == owner]
        return float(total or 0.0) + sum(charge.cost_or_priced_at(rate_per_min) for charge in waiting)

    def usage_page(self, owner: str, before: int | None, limit: int) -> list[UsageRow]:
        """Up to `limit` of `owner`'s charges older than row `before` (all when None), newest first. Charges
        still waiting for the storage have no row id yet and are not listed."""
        self.flush()
        columns = [charges.c.id if name == "row_id" else charges.c[name] for name in UsageRow.model_fields]
        query = (
            select(*columns)
            .where(charges.c.owner == owner, charges.c.id < (before if before is not None else 2**63 - 1))
            .order_by(charges.c.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        fields = UsageRow.model_fields
        return [UsageRow(**dict(zip(fields, row, strict=True))) for row in rows]

    def flush(self) -> None:
        """Write the charges that wait for the storage; stop at the first refusal (they wait on)."""
        for charge_id, charge in list(self.pending.items()):
            details = charge.details
            row = {"charge_id": charge.charge_id, "owner": charge.owner, "audio_seconds": charge.audio_seconds,
                   "task": details.task, "created_at": charge.created_at, "model": details.model,
                   "language": details.language, "bytes": details.bytes, "cost": charge.cost,
                   "profanity_filter": details.profanity_filter, "role_tagging": details.role_tagging,
                   "emotions": details.emotions, "llm_input_tokens": details.llm_input_tokens,
                   "llm_output_tokens": details.llm_output_tokens}  # fmt: skip
            try:
                with database_storage("the usage ledger"), writing(self.engine) as connection:
                    connection.execute(insert_ignoring_duplicates(connection, charges, ["charge_id"]), row)
            except StorageError as error:
                logger.warning("%d charges wait for the storage: %s", len(self.pending), error)
                return
            del self.pending[charge_id]

    def _recorded(self, charge_id: str) -> bool:
        with database_storage("the usage ledger"), self.engine.connect() as connection:
            return connection.scalar(select(charges.c.id).where(charges.c.charge_id == charge_id)) is not None


def get_or_create_ledger(storage: StorageConfig) -> ActorProxy[Any]:
    """The cluster's one ledger, shared by the ingress replicas and the tracker."""
    return get_or_create(UsageLedger, "UsageLedger", storage, storage)
