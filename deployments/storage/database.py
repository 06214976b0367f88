"""The database that holds job records (the tracker's) and their callbacks' outbox, the usage ledger (the
ledger's), the keys managed by the admin API (deployments/keys/store.py's) and the enrolled voices
(deployments/voices/store.py's): tables of several owners, one schema. SQLite, one file under
`storage.state_dir`, is the embedded default; a cluster sets
`storage.database_url` to a PostgreSQL server, since SQLite's locking is not safe on the network volume a
cluster would share. Both go through SQLAlchemy Core, so each query is written once.

Schema migrations are a small versioned table (`schema_version`, one row), not Alembic: the schema is a few
tables that the service itself creates when an actor opens the database (there is no deploy step to run
`alembic upgrade`), the files written by earlier versions (whose schema came from `CREATE TABLE IF NOT
EXISTS` and added columns, with no Alembic stamp) must simply open, and an Alembic environment (ini file,
env.py, script directory shipped inside the package) would be more code than the migrations. `migrate_schema`
runs the steps newer than the stored version in one transaction, serialised between the actors that open the
database at once (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock). A new step is
appended to `MIGRATIONS` and never edited afterwards.

Job records of earlier shapes are brought up to date row by row by the job store (deployments/jobs/_migrations.py).
"""

import errno
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Double,
    Engine,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    event,
    false,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.sql.dml import Insert

from deployments.config import StorageConfig
from deployments.errors import StorageError, sqlite_storage_error

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's or actor's log lines

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("owner", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("completed_at", Text),
    Column("record", Text, nullable=False, comment="The Job as JSON (deployments/jobs/records.py)."),
)

charges = Table(
    "charges",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("charge_id", Text, unique=True, nullable=False, comment="Unique: a charge is recorded once per id."),
    Column("owner", Text, nullable=False),
    Column("audio_seconds", Double, nullable=False),
    Column("task", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("model", Text),
    Column("language", Text),
    Column("bytes", BigInteger, nullable=False, server_default="0"),
    Column("cost", Double),
    Column("profanity_filter", Boolean, nullable=False, server_default=false()),
    Column("role_tagging", Boolean, nullable=False, server_default=false()),
    Column("emotions", Boolean, nullable=False, server_default=false()),
    Column("llm_input_tokens", Integer),
    Column("llm_output_tokens", Integer),
    Index("charges_by_owner", "owner", "id"),
    sqlite_autoincrement=True,
)

callbacks = Table(
    "callbacks",
    metadata,
    Column("job_id", Text, primary_key=True, comment="One callback per job, written with its final record."),
    Column("owner", Text, nullable=False),
    Column("url", Text, nullable=False),
    Column("ended_at", Double, nullable=False, comment="The job's end (Unix seconds): retries stop at its expiry."),
    Column("status", Text, nullable=False, comment="pending, delivered or failed."),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_status", Integer, comment="The receiver's last HTTP status; NULL: no answer."),
    Column("next_attempt_at", Double, nullable=False),
    Column("lease_until", Double, nullable=False, server_default="0", comment="Held by a sender until then."),
    Column("claim", Text, comment="The holding sender's claim: only it records the attempt's outcome."),
    Index("callbacks_due", "status", "next_attempt_at"),
)
"""The callback outbox (deployments/callbacks/store.py): the job store adds a row in the transaction that
stores the job's end, so a callback is never lost with a tracker; the ingress replicas send them."""

schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))

api_keys = Table(
    "api_keys",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("key_id", Text, unique=True, nullable=False, comment="The admin API's id of the key (not secret)."),
    Column("key_hash", Text, unique=True, nullable=False, comment="SHA-256 hex of the key: the ledger's owner."),
    Column("prefix", Text, nullable=False, comment="The key's first characters, to tell keys apart."),
    Column("name", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("revoked_at", Double),
    Column("balance", Double, comment="The initial balance; credits are ledger rows. NULL: unlimited."),
    Column("rate_per_min", Double),
    Column("currency", Text),
    Column("requests_per_second", Double),
    Column("max_running_jobs", Integer),
    Column("callback_secret", Text, comment="Signs the key's job callbacks; the key itself is never stored."),
    sqlite_autoincrement=True,
)

api_keys_version = Table(
    "api_keys_version",
    metadata,
    Column("version", BigInteger, nullable=False, comment="Raised by every change of api_keys, in its transaction."),
)

key_audit = Table(
    "key_audit",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("at", Double, nullable=False),
    Column("actor", Text, nullable=False, comment="The admin key's prefix or name, never the key."),
    Column("action", Text, nullable=False),
    Column("key_id", Text, nullable=False),
    Column("details", Text, nullable=False, comment="JSON."),
    Index("key_audit_by_key", "key_id", "id"),
    sqlite_autoincrement=True,
)

voices = Table(
    "voices",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("voice_id", Text, unique=True, nullable=False),
    Column("owner", Text, nullable=False, comment="SHA-256 hex of the key that enrolled it: only it sees the voice."),
    Column("name", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("speech_s", Double, nullable=False, comment="Seconds of speech the embedding was computed from."),
    Column("embedding", Text, nullable=False, comment="The speaker encoder's unit vector, JSON; never the audio."),
    Column("encoder", Text, nullable=False, comment="Which encoder made it: another one's vectors do not compare."),
    Index("voices_by_owner", "owner", "seq"),
    sqlite_autoincrement=True,
)
"""Enrolled voices (deployments/voices/store.py)."""

CHARGES_COLUMNS_ADDED = {  # columns that versions before `schema_version` added to a SQLite `charges` table
    "model": "TEXT",
    "language": "TEXT",
    "bytes": "INTEGER NOT NULL DEFAULT 0",
    "cost": "REAL",
    "profanity_filter": "INTEGER NOT NULL DEFAULT 0",
    "role_tagging": "INTEGER NOT NULL DEFAULT 0",
    "emotions": "INTEGER NOT NULL DEFAULT 0",
    "llm_input_tokens": "INTEGER",
    "llm_output_tokens": "INTEGER",
}

_ADVISORY_LOCK = 0x5717_0001  # PostgreSQL: the lock that serialises schema migrations (any fixed number)


def _baseline(connection: Connection) -> None:
    """Version 1: the tables, and a SQLite file of an earlier version brought to the same schema: its
    `charges` gain the newer columns (their rows keep NULL costs), and the per-key totals that versions
    before the ledger kept in a `usage` table become one charge each."""
    metadata.create_all(connection, tables=[jobs, charges], checkfirst=True)
    present = {column["name"] for column in inspect(connection).get_columns("charges")}
    for column, sql_type in CHARGES_COLUMNS_ADDED.items():
        if column not in present:
            connection.exec_driver_sql(f"ALTER TABLE charges ADD COLUMN {column} {sql_type}")
    if inspect(connection).has_table("usage"):
        totals = connection.exec_driver_sql("SELECT owner, audio_seconds FROM usage").fetchall()
        for owner, seconds in totals:
            statement = insert_ignoring_duplicates(connection, charges, ["charge_id"])
            connection.execute(
                statement,
                {"charge_id": f"usage-total:{owner}", "owner": owner, "audio_seconds": seconds, "task": "migrated",
                 "created_at": time.time()},
            )  # fmt: skip
        connection.exec_driver_sql("DROP TABLE usage")


def _api_keys(connection: Connection) -> None:
    """Version 2: keys managed while the service runs (deployments/keys/store.py), their change counter and audit
    trail."""
    metadata.create_all(connection, tables=[api_keys, api_keys_version, key_audit], checkfirst=True)
    connection.execute(api_keys_version.insert(), {"version": 0})


def _callbacks_outbox(connection: Connection) -> None:
    """Version 3: the callback outbox."""
    callbacks.create(connection, checkfirst=True)


def _voices(connection: Connection) -> None:
    """Version 4: enrolled voices."""
    voices.create(connection, checkfirst=True)


MIGRATIONS: list[Callable[[Connection], None]] = [_baseline, _api_keys, _callbacks_outbox, _voices]
"""Step n brings the schema from version n-1 to n; append, never edit."""


def database_engine(database: StorageConfig | str | Path, reading: bool = False) -> Engine:
    """An engine for the configured database (its URL, password from the environment), a PostgreSQL URL, or
    a SQLite file's path. SQLite gets WAL and fsync on commit, and its write transactions (`writing`) take the
    write lock at their start (`BEGIN IMMEDIATE`), so two writers wait for each other instead of failing
    half-way; reads take none, and WAL lets them read beside the writer. A reader (`reading`: an ingress
    replica, whose polls run in threads) gets a pool of connections, a writer (an actor) one."""
    target = database.database_target() if isinstance(database, StorageConfig) else database
    if isinstance(target, URL) or (isinstance(target, str) and "://" in target):
        url = postgresql_url(target)
        return create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=4)
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A writer (an actor: one thread) keeps one connection, as it always has; readers get a small pool.
    pool = {"pool_size": 4, "max_overflow": 4} if reading else {"pool_size": 1, "max_overflow": 0}
    engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False}, **pool)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        _switch_to_wal(dbapi_connection)
        dbapi_connection.execute("PRAGMA synchronous=FULL")

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        if options.get("one_statement", False):
            return  # SQLite runs a lone statement in a transaction of its own: no BEGIN, no ROLLBACK
        connection.exec_driver_sql("BEGIN IMMEDIATE" if options.get("writing", False) else "BEGIN")

    return engine


def _switch_to_wal(dbapi_connection: sqlite3.Connection, attempts: int = 100) -> None:
    """`PRAGMA journal_mode=WAL`, tried again while another opener of a new file holds it ("database is locked":
    the busy timeout does not cover the switch; four openers at once failed one in a CI run)."""
    for attempt in range(attempts):
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def one_statement(engine: Engine) -> Connection:
    """A connection for one read statement (`with one_statement(engine) as connection:`): on SQLite no BEGIN and
    ROLLBACK around it, which took more than half of a running job's poll in the store (issue 63). A read of
    several statements that must agree (the key store's version and keys) takes `engine.connect()`."""
    return engine.connect().execution_options(one_statement=True)


def writing(engine: Engine) -> Any:
    """A write transaction (`with writing(engine) as connection:`): committed at the end, rolled back on error."""
    return engine.execution_options(writing=True).begin()


def postgresql_url(url: str | URL) -> URL:
    """`url` with psycopg (3) as its driver, whatever PostgreSQL scheme it was written with."""
    parsed = url if isinstance(url, URL) else _parse(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"database_url must be a PostgreSQL URL (postgresql://...), not {parsed.drivername}://")
    return parsed.set(drivername="postgresql+psycopg")


def _parse(url: str) -> URL:
    return make_url(url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url)


def migrate_schema(engine: Engine) -> int:
    """Bring the database's schema to the newest version; returns that version. Safe to run from several
    processes at once: one migrates, the others wait and find it done."""
    with writing(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK})
        schema_version.create(connection, checkfirst=True)
        stored = connection.scalar(select(schema_version.c.version))
        current = stored or 0
        for version, step in enumerate(MIGRATIONS, start=1):
            if version > current:
                step(connection)
        if stored is None:
            connection.execute(schema_version.insert(), {"version": len(MIGRATIONS)})
        elif stored < len(MIGRATIONS):
            connection.execute(schema_version.update().values(version=len(MIGRATIONS)))
    return max(current, len(MIGRATIONS))


def insert_ignoring_duplicates(connection: Connection | Engine, table: Table, keys: list[str]) -> Insert:
    """`INSERT ... ON CONFLICT (keys) DO NOTHING` in the connection's dialect."""
    statement: Insert = _insert(connection, table).on_conflict_do_nothing(index_elements=keys)
    return statement


def upsert(connection: Connection | Engine, table: Table, keys: list[str]) -> Insert:
    """`INSERT ... ON CONFLICT (keys) DO UPDATE` of every other column, in the connection's dialect."""
    statement = _insert(connection, table)
    others = {column.name: statement.excluded[column.name] for column in table.columns if column.name not in keys}
    updating: Insert = statement.on_conflict_do_update(index_elements=keys, set_=others)
    return updating


def _insert(connection: Connection | Engine, table: Table) -> Any:
    return (postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert)(table)


_POSTGRESQL_ERRNO = {"53100": errno.ENOSPC, "25006": errno.EROFS}  # disk_full, read_only_sql_transaction


@contextmanager
def database_storage(what: str) -> Iterator[None]:
    """The database's refusals as StorageError, which names the cause: SQLite's disk full, read-only or I/O
    errors; PostgreSQL's disk full, a read-only server, or a server that cannot be reached (the ingress answers
    503, and the tracker and ledger keep what they could not write and try again). Anything else is a bug and
    shows as it is."""
    try:
        yield
    except DBAPIError as error:
        storage = storage_error(error, what)
        if storage is None:
            raise
        raise storage from error


def storage_error(error: DBAPIError, what: str) -> StorageError | None:
    original = error.orig
    if isinstance(original, sqlite3.OperationalError):
        return sqlite_storage_error(original, what)
    number = _POSTGRESQL_ERRNO.get(getattr(original, "sqlstate", None) or "")
    if number is None and (error.connection_invalidated or isinstance(error, OperationalError)):
        number = errno.EIO  # the server is down or unreachable
    if number is None:
        return None
    logger.warning("%s: %s", what, original)  # the details (host, port) go to the log, not to clients
    return StorageError(number, f"{what} could not be written: the database refused or is unreachable"
                                f" ({type(original).__name__})")  # fmt: skip
