"""Durable job state. The tracker writes every change through a `JobStore`, and the ingress replicas read
finished and running jobs from it directly (`deployments/jobs/reader.py`). `SQLJobStore` keeps it in the
service's database: SQLite by default, PostgreSQL on a cluster (deployments/storage/database.py)."""

import json
import logging
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, bindparam, delete, select, update

from deployments.callbacks import store as callbacks
from deployments.config import StorageConfig
from deployments.errors import StorageError
from deployments.jobs._migrations import current_record, is_current
from deployments.jobs.records import Job
from deployments.storage.database import (
    database_engine,
    database_storage,
    jobs,
    migrate_schema,
    one_statement,
    upsert,
    writing,
)

logger = logging.getLogger("ray.serve")  # where Ray shows an actor's log lines


class JobStore(Protocol):
    """Writes raise `deployments.errors.StorageError` when the storage refuses them. `load_all` gives jobs in
    the current shape: a store brings records of earlier versions into it (deployments/jobs/_migrations.py)."""

    def save(self, job: Job) -> None: ...
    def load_all(self) -> list[Job]: ...
    def delete(self, job_ids: list[str]) -> None: ...


class SQLJobStore:
    """One row per job: the record as JSON, with the columns queries need. `database` is the storage settings
    (their database), a SQLite file's path or a PostgreSQL URL. Opening it as a writer (the tracker) brings
    the schema and the rows of earlier versions into the current shape, once; a reader (`reading`) changes
    nothing."""

    def __init__(self, database: StorageConfig | str | Path | Engine, reading: bool = False) -> None:
        self.engine = database if isinstance(database, Engine) else database_engine(database, reading=reading)
        if not reading:
            migrate_schema(self.engine)
            self.migrate()

    def migrate(self) -> None:
        """Rewrite rows stored by earlier versions; rows of the current shape are left as they are. When the
        storage refuses the writes, `load_all` reads those rows migrated all the same, and the next open
        tries again."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(jobs.c.job_id, jobs.c.record)).all()
        rewritten: list[dict[str, str]] = []
        expired: list[dict[str, str]] = []
        for job_id, text in rows:
            record = json.loads(text)
            if is_current(record):
                continue
            current = current_record(record)
            if current is None:
                expired.append({"id": job_id})
            else:
                rewritten.append({"id": job_id, "new_record": Job.model_validate(current).model_dump_json()})
        if not rewritten and not expired:
            return
        try:
            with database_storage("the job store"), writing(self.engine) as connection:  # all rewritten, or none
                if rewritten:
                    connection.execute(
                        update(jobs).where(jobs.c.job_id == bindparam("id")).values(record=bindparam("new_record")),
                        rewritten,
                    )
                if expired:
                    connection.execute(delete(jobs).where(jobs.c.job_id == bindparam("id")), expired)
        except StorageError as error:
            logger.warning("job store: %d records of earlier versions are read migrated but stay as they are"
                           " until the next start: %s", len(rewritten) + len(expired), error)  # fmt: skip
            return
        logger.info("job store: %d jobs stored by earlier versions rewritten in the current shape; %d holding only a"
                    " result rendered by them expired", len(rewritten), len(expired))  # fmt: skip

    def save(self, job: Job) -> None:
        """Raises StorageError when the storage refuses the write (disk full, read-only, database unreachable)."""
        completed_at = job.completed_at.isoformat() if job.completed_at else None
        row = {"job_id": job.job_id, "owner": job.owner, "status": job.status.value, "completed_at": completed_at,
               "record": job.model_dump_json()}  # fmt: skip
        with database_storage("the job store"), writing(self.engine) as connection:
            connection.execute(upsert(connection, jobs, ["job_id"]), row)
            if job.completed_at is not None and job.request.callback_url is not None:  # the end and its callback
                callbacks.enqueue(connection, job.job_id, job.owner, job.request.callback_url,
                                  job.completed_at.timestamp())  # fmt: skip

    def load_all(self) -> list[Job]:
        with self.engine.connect() as connection:
            texts = connection.execute(select(jobs.c.record)).scalars().all()
        records = (current_record(json.loads(text)) for text in texts)
        return [Job.model_validate(record) for record in records if record is not None]

    def load(self, job_id: str, owner: str) -> Job | None:
        """`owner`'s job `job_id` as stored, or None (no such job, another key's, or one whose outcome was
        rendered by an earlier version)."""
        query = select(jobs.c.record).where(jobs.c.job_id == job_id, jobs.c.owner == owner)
        with one_statement(self.engine) as connection:
            text = connection.execute(query).scalar_one_or_none()
        record = current_record(json.loads(text)) if text is not None else None
        return Job.model_validate(record) if record is not None else None

    def load_owned(self, owner: str) -> list[Job]:
        """Every job of `owner`'s as stored (for listings), in no particular order."""
        with self.engine.connect() as connection:
            texts = connection.execute(select(jobs.c.record).where(jobs.c.owner == owner)).scalars().all()
        records = (current_record(json.loads(text)) for text in texts)
        return [Job.model_validate(record) for record in records if record is not None]

    def delete(self, job_ids: list[str]) -> None:
        if not job_ids:
            return
        with database_storage("the job store"), writing(self.engine) as connection:
            connection.execute(delete(jobs).where(jobs.c.job_id == bindparam("id")), [{"id": i} for i in job_ids])
            callbacks.forget(connection, job_ids)
