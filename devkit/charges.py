"""What the usage ledger charged a key, read through the storage layer: the fault tests and scripts/chaos.py
check that a job is charged once, whichever database the service keeps (SQLite or PostgreSQL)."""

from typing import Any

from sqlalchemy import select

from deployments.config import StorageConfig
from deployments.jobs.records import owner_of
from deployments.storage.database import charges, database_engine


def charges_of(storage: dict[str, Any], key: str) -> dict[str, float]:
    """Each charge to `key`: its charge id (a job's id) and audio seconds, from the ledger's table in the database
    that the service's `storage` config names."""
    engine = database_engine(StorageConfig(**storage), reading=True)
    try:
        with engine.connect() as connection:
            query = select(charges.c.charge_id, charges.c.audio_seconds).where(charges.c.owner == owner_of(key))
            return {charge_id: seconds for charge_id, seconds in connection.execute(query)}
    finally:
        engine.dispose()
