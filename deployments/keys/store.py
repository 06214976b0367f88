"""The keys the admin API manages, in the service's database (SQLite or PostgreSQL, deployments/storage/).

A key is shown once, when it is made, and stored only as its SHA-256 (the ledger's owner id, so usage, jobs
and limits work as for any key) with a short prefix to tell keys apart. Every change writes, in its own
transaction, the change, a row of the audit trail and a raised `api_keys_version`: an ingress replica that
polls that one number learns of any change with one cheap query and reloads the keys only then. A credit is
a row of the ledger's `charges` (task `credit`, no audio, a negative cost), so balances and usage statements
show it with no rule of their own.

Pure database access: the calls block; the edge runs them off its event loop.
"""

import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, case, func, select, update

from deployments.config import StorageConfig
from deployments.jobs.records import owner_of
from deployments.storage.database import (
    api_keys,
    api_keys_version,
    charges,
    database_engine,
    database_storage,
    key_audit,
    migrate_schema,
    one_statement,
    writing,
)

KEY_PREFIX = "sk-"
SHOWN_PREFIX_CHARS = 7
"""`sk-` and four characters: enough to tell keys apart, too few to guess the rest from."""

SETTINGS = ("name", "balance", "rate_per_min", "currency", "requests_per_second", "max_running_jobs")
CHANGEABLE = ("name", "rate_per_min", "currency", "requests_per_second", "max_running_jobs", "callback_secret")
"""What an update may change: not the balance (credits top it up, as ledger rows), not the key."""


def new_secret() -> str:
    """A new key: `sk-` and 32 random bytes, URL-safe."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class StoredKey:
    """A key as stored: its hash, never the key."""

    seq: int
    key_id: str
    key_hash: str
    prefix: str
    name: str
    created_at: float
    updated_at: float
    revoked_at: float | None
    balance: float | None
    rate_per_min: float | None
    currency: str | None
    requests_per_second: float | None
    max_running_jobs: int | None
    callback_secret: str | None = field(repr=False)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class NewKey:
    """A key just made: the only time its secret exists outside the client."""

    key: str = field(repr=False)
    stored: StoredKey


@dataclass(frozen=True)
class AuditEntry:
    entry_id: int
    at: float
    actor: str
    action: str
    key_id: str
    details: dict[str, Any]


@dataclass(frozen=True)
class Spending:
    """What an owner's charges add up to: priced ones by their cost, older unpriced ones in audio seconds."""

    cost: float = 0.0
    unpriced_seconds: float = 0.0

    def spent(self, rate_per_min: float) -> float:
        return self.cost + self.unpriced_seconds / 60 * rate_per_min


class RevokedKeyError(ValueError):
    """A change to a revoked key."""


class KeyStore:
    """`database` is the storage settings (their database), a SQLite file's path, a PostgreSQL URL or an
    engine. Opening it brings the schema up to date (safe beside other processes doing the same)."""

    def __init__(self, database: StorageConfig | str | Path | Engine) -> None:
        self.engine = database if isinstance(database, Engine) else database_engine(database, reading=True)
        migrate_schema(self.engine)

    # reads

    def version(self) -> int:
        """Raised by every change: compare with the last one seen to know whether to reload."""
        with database_storage("the key store"), one_statement(self.engine) as connection:
            return int(connection.scalar(select(api_keys_version.c.version)) or 0)

    def active(self) -> tuple[int, list[StoredKey]]:
        """The version and the keys not revoked, read together, oldest first (PostgreSQL returns rows in no set
        order once some were updated: a page of keys and the active ones must agree)."""
        active = select(api_keys).where(api_keys.c.revoked_at.is_(None)).order_by(api_keys.c.seq)
        with database_storage("the key store"), self.engine.connect() as connection:
            version = int(connection.scalar(select(api_keys_version.c.version)) or 0)
            rows = connection.execute(active).all()
        return version, [_stored(row) for row in rows]

    def get(self, key_id: str) -> StoredKey | None:
        with database_storage("the key store"), self.engine.connect() as connection:
            row = connection.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
        return None if row is None else _stored(row)

    def page(self, after: int | None, limit: int) -> list[StoredKey]:
        """Up to `limit` keys made after `after` (a key's `seq`; all when None), oldest first, revoked ones too."""
        query = select(api_keys).order_by(api_keys.c.seq).limit(limit)
        if after is not None:
            query = query.where(api_keys.c.seq > after)
        with database_storage("the key store"), self.engine.connect() as connection:
            return [_stored(row) for row in connection.execute(query).all()]

    def spending(self, owners: list[str]) -> dict[str, Spending]:
        """Each owner's charges in all (credits are negative), in one query."""
        if not owners:
            return {}
        unpriced = func.sum(case((charges.c.cost.is_(None), charges.c.audio_seconds), else_=0.0))
        query = (
            select(charges.c.owner, func.coalesce(func.sum(charges.c.cost), 0.0), func.coalesce(unpriced, 0.0))
            .where(charges.c.owner.in_(owners))
            .group_by(charges.c.owner)
        )
        with database_storage("the key store"), self.engine.connect() as connection:
            rows = connection.execute(query).all()
        found = {owner: Spending(float(cost), float(seconds)) for owner, cost, seconds in rows}
        return {owner: found.get(owner, Spending()) for owner in owners}

    def audit_page(self, before: int | None, limit: int, key_id: str | None = None) -> list[AuditEntry]:
        """Up to `limit` audit entries older than `before` (all when None), newest first; one key's only when
        `key_id` is given."""
        query = select(key_audit).order_by(key_audit.c.id.desc()).limit(limit)
        if before is not None:
            query = query.where(key_audit.c.id < before)
        if key_id is not None:
            query = query.where(key_audit.c.key_id == key_id)
        with database_storage("the key store"), self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [AuditEntry(row.id, row.at, row.actor, row.action, row.key_id, json.loads(row.details)) for row in rows]

    # changes: each with its audit row and a raised version, in one transaction

    def create(self, actor: str, name: str, callback_secret: str | None = None, **settings: Any) -> NewKey:
        """A new key with `settings` (balance, rate_per_min, currency, requests_per_second, max_running_jobs)."""
        unknown = set(settings) - set(SETTINGS)
        if unknown:
            raise TypeError(f"unknown key settings: {sorted(unknown)}")
        secret, now = new_secret(), time.time()
        row = {"key_id": "key_" + secrets.token_hex(8), "key_hash": owner_of(secret),
               "prefix": secret[:SHOWN_PREFIX_CHARS], "name": name, "created_at": now, "updated_at": now,
               "callback_secret": callback_secret, **dict.fromkeys(SETTINGS[1:]), **settings}  # fmt: skip
        with database_storage("the key store"), writing(self.engine) as connection:
            connection.execute(api_keys.insert(), row)
            details = {setting: row[setting] for setting in SETTINGS} | {"callback_secret": callback_secret is not None}
            self._changed(connection, actor, "create", row["key_id"], details, now)
            stored = self._load(connection, row["key_id"])
        assert stored is not None
        return NewKey(secret, stored)

    def update(self, actor: str, key_id: str, changes: dict[str, Any]) -> StoredKey | None:
        """The key with `changes` (of CHANGEABLE; None clears a setting); None for an unknown key. Raises
        RevokedKeyError for a revoked one."""
        unknown = set(changes) - set(CHANGEABLE)
        if unknown:
            raise TypeError(f"unknown key settings: {sorted(unknown)}")
        now = time.time()
        with database_storage("the key store"), writing(self.engine) as connection:
            if self._changeable(connection, key_id) is None:
                return None
            connection.execute(update(api_keys).where(api_keys.c.key_id == key_id).values(updated_at=now, **changes))
            details = {name: value for name, value in changes.items() if name != "callback_secret"}
            if "callback_secret" in changes:
                details["callback_secret"] = changes["callback_secret"] is not None
            self._changed(connection, actor, "update", key_id, details, now)
            return self._load(connection, key_id)

    def credit(self, actor: str, key_id: str, amount: float, note: str | None = None) -> StoredKey | None:
        """Top the key's balance up by `amount`: a ledger row of negative cost. None for an unknown key;
        RevokedKeyError for a revoked one."""
        now = time.time()
        with database_storage("the key store"), writing(self.engine) as connection:
            current = self._changeable(connection, key_id)
            if current is None:
                return None
            charge_id = f"credit:{uuid.uuid4().hex}"
            connection.execute(
                charges.insert(),
                {"charge_id": charge_id, "owner": current.key_hash, "audio_seconds": 0.0, "task": "credit",
                 "created_at": now, "cost": -amount},
            )  # fmt: skip
            details = {"amount": amount, "note": note, "charge_id": charge_id}
            self._changed(connection, actor, "credit", key_id, details, now)
            return current

    def revoke(self, actor: str, key_id: str) -> StoredKey | None:
        """Revoke the key (once: revoking it again changes nothing); None for an unknown key."""
        now = time.time()
        with database_storage("the key store"), writing(self.engine) as connection:
            current = self._load(connection, key_id)
            if current is None or current.revoked:
                return current
            connection.execute(update(api_keys).where(api_keys.c.key_id == key_id).values(revoked_at=now))
            self._changed(connection, actor, "revoke", key_id, {}, now)
            return self._load(connection, key_id)

    def _changed(
        self, connection: Connection, actor: str, action: str, key_id: str, details: dict[str, Any], now: float
    ) -> None:
        connection.execute(
            key_audit.insert(),
            {"at": now, "actor": actor, "action": action, "key_id": key_id, "details": json.dumps(details)},
        )
        # A row lock on PostgreSQL, the write lock on SQLite: versions rise in the order changes commit.
        connection.execute(update(api_keys_version).values(version=api_keys_version.c.version + 1))

    def _changeable(self, connection: Connection, key_id: str) -> StoredKey | None:
        """The key, None when unknown; RevokedKeyError when revoked (a revoked key is never changed again)."""
        current = self._load(connection, key_id)
        if current is not None and current.revoked:
            raise RevokedKeyError(f"key {key_id} is revoked")
        return current

    def _load(self, connection: Connection, key_id: str) -> StoredKey | None:
        row = connection.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
        return None if row is None else _stored(row)


def _stored(row: Any) -> StoredKey:
    return StoredKey(**{column: getattr(row, column) for column in StoredKey.__dataclass_fields__})
