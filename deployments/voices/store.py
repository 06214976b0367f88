"""Enrolled voices in the service's database (SQLite or PostgreSQL, deployments/storage/): per key, a name and
the speaker encoder's embedding of the enrolment clip's speech, never the audio. A key sees only its own voices:
every query is by owner, so another key's id reads as unknown.

Pure database access: the calls block; the edge runs them off its event loop.
"""

import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, delete, func, select, text, update

from deployments.config import StorageConfig
from deployments.storage.database import (
    database_engine,
    database_storage,
    migrate_schema,
    one_statement,
    voices,
    writing,
)
from deployments.types import KnownVoice

VOICE_PREFIX = "voice_"


class VoiceLimitError(ValueError):
    """The key keeps as many voices as it may."""


@dataclass(frozen=True)
class StoredVoice:
    seq: int
    voice_id: str
    owner: str
    name: str
    created_at: float
    speech_s: float
    encoder: str
    embedding: list[float] = field(repr=False)

    def known(self) -> KnownVoice:
        """The voice as a diarized request names its speakers with."""
        return KnownVoice(voice_id=self.voice_id, name=self.name, embedding=self.embedding, encoder=self.encoder)


class VoiceStore:
    """`database` is the storage settings (their database), a SQLite file's path, a PostgreSQL URL or an
    engine. Opening it brings the schema up to date (safe beside other processes doing the same)."""

    def __init__(self, database: StorageConfig | str | Path | Engine) -> None:
        self.engine = database if isinstance(database, Engine) else database_engine(database, reading=True)
        migrate_schema(self.engine)

    def get(self, owner: str, voice_id: str) -> StoredVoice | None:
        query = select(voices).where(voices.c.owner == owner, voices.c.voice_id == voice_id)
        with database_storage("the voice store"), one_statement(self.engine) as connection:
            row = connection.execute(query).first()
        return None if row is None else _stored(row)

    def many(self, owner: str, voice_ids: list[str]) -> dict[str, StoredVoice]:
        """The owner's voices among `voice_ids`, by id (unknown ids and other keys' are missing)."""
        if not voice_ids:
            return {}
        query = select(voices).where(voices.c.owner == owner, voices.c.voice_id.in_(voice_ids))
        with database_storage("the voice store"), one_statement(self.engine) as connection:
            return {row.voice_id: _stored(row) for row in connection.execute(query).all()}

    def page(self, owner: str, after: int | None, limit: int) -> list[StoredVoice]:
        """Up to `limit` of the owner's voices enrolled after `after` (a voice's `seq`; from the first when None),
        oldest first."""
        query = select(voices).where(voices.c.owner == owner).order_by(voices.c.seq).limit(limit)
        if after is not None:
            query = query.where(voices.c.seq > after)
        with database_storage("the voice store"), one_statement(self.engine) as connection:
            return [_stored(row) for row in connection.execute(query).all()]

    def create(
        self, owner: str, name: str, embedding: list[float], speech_s: float, encoder: str, max_per_key: int
    ) -> StoredVoice:
        """A new voice; VoiceLimitError when the owner keeps `max_per_key` already (counted in the transaction
        that adds it, so two enrolments at once cannot pass the limit together)."""
        row = {"voice_id": VOICE_PREFIX + secrets.token_hex(12), "owner": owner, "name": name,
               "created_at": time.time(), "speech_s": speech_s, "embedding": json.dumps(embedding),
               "encoder": encoder}  # fmt: skip
        with database_storage("the voice store"), writing(self.engine) as connection:
            if connection.dialect.name == "postgresql":  # SQLite's write transactions are serialised already
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _owner_lock(owner)})
            count = connection.scalar(select(func.count()).select_from(voices).where(voices.c.owner == owner)) or 0
            if count >= max_per_key:
                raise VoiceLimitError(f"this key keeps {count} voices, its limit: delete one first")
            connection.execute(voices.insert(), row)
            stored = connection.execute(select(voices).where(voices.c.voice_id == row["voice_id"])).one()
        return _stored(stored)

    def rename(self, owner: str, voice_id: str, name: str) -> StoredVoice | None:
        where = (voices.c.owner == owner, voices.c.voice_id == voice_id)
        with database_storage("the voice store"), writing(self.engine) as connection:
            if connection.execute(update(voices).where(*where).values(name=name)).rowcount == 0:
                return None
            return _stored(connection.execute(select(voices).where(*where)).one())

    def delete(self, owner: str, voice_id: str) -> bool:
        """Whether the owner had the voice (it is gone either way)."""
        statement = delete(voices).where(voices.c.owner == owner, voices.c.voice_id == voice_id)
        with database_storage("the voice store"), writing(self.engine) as connection:
            return bool(connection.execute(statement).rowcount)


def _owner_lock(owner: str) -> int:
    """A PostgreSQL advisory lock's number for one owner's enrolments (a signed 64-bit integer)."""
    return int.from_bytes(hashlib.sha256(b"voices:" + owner.encode()).digest()[:8], "big", signed=True)


def _stored(row: Any) -> StoredVoice:
    values = {column: getattr(row, column) for column in StoredVoice.__dataclass_fields__}
    return StoredVoice(**values | {"embedding": json.loads(row.embedding)})
