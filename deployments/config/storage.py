"""Where the service keeps what outlives a request (`storage:`): the spool, the database, the detached actors'
namespace."""

import os
from pathlib import Path

from pydantic import Field, field_validator
from sqlalchemy.engine import URL, make_url

from deployments.config.base import StrictModel


class StorageConfig(StrictModel):
    """Where the service keeps what outlives a request, for every feature: the spool (uploads of both modes,
    decoded audio for the Diarizer), the database (job records and the usage ledger), and the namespace of
    the cluster's detached actors (job tracker, usage ledger, rate limiter)."""

    state_dir: str = Field(
        "~/.local/share/stt-service",
        description="Holds spool/ (uploads of both modes, decoded audio for the Diarizer) and, unless database_url"
        " is set, jobs.sqlite3 (jobs and the usage ledger). Must survive restarts; on a cluster, storage every"
        " node sees (and a database_url: SQLite's locking is not safe on a network filesystem).",
    )
    actor_namespace: str = Field(
        "stt-service", description="The Ray namespace of the detached actors: one set per namespace and cluster."
    )
    actor_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources the detached actors ask for, to keep them on chosen nodes (e.g. off spot"
        ' workers: {"stable": 0.01}, with that resource on those nodes). Unset: any node; Ray restarts them on'
        " another when theirs is lost.",
    )
    database_url: str | None = Field(
        None,
        description="A PostgreSQL server for job records and the usage ledger (postgresql://user@host:5432/db),"
        " for a cluster, whose nodes cannot share a SQLite file safely. Leave the password out: it is read from"
        " the environment variable `database_password_env`. Unset: jobs.sqlite3 under state_dir.",
    )
    database_password_env: str = Field(
        "STT_DATABASE_PASSWORD",
        description="The environment variable holding database_url's password (on KubeRay: from a Secret).",
    )

    @field_validator("database_url")
    @classmethod
    def _postgresql_only(cls, url: str | None) -> str | None:
        if url is not None and not url.split("://", 1)[0].startswith(("postgresql", "postgres")):
            raise ValueError("database_url must be a PostgreSQL URL (postgresql://user@host:port/database)")
        return url

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir).expanduser()

    @property
    def spool_dir(self) -> Path:
        """Uploads and fetched URLs of both modes, until their request or job ends."""
        return self.state_path / "spool"

    @property
    def recordings_dir(self) -> Path:
        """Finished diarized jobs' recordings, kept as long as the job (a speaker may be enrolled from one)."""
        return self.state_path / "recordings"

    @property
    def database_path(self) -> Path:
        """Jobs and the usage ledger (two tables, two owners), when no database_url is set."""
        return self.state_path / "jobs.sqlite3"

    def database_target(self) -> Path | URL:
        """Where the process that calls this keeps jobs and charges: the PostgreSQL URL with its password from
        the environment, or the SQLite file. The environment is read here, by the process that opens the
        database, and not when the settings are made: settings travel to the detached actors as arguments,
        which Ray keeps (in Redis, with GCS fault tolerance); a password read earlier would travel with them."""
        if self.database_url is None:
            return self.database_path
        url = make_url(self.database_url.replace("postgres://", "postgresql://", 1))
        password = os.environ.get(self.database_password_env)
        return url.set(password=password) if url.password is None and password else url
