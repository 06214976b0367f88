"""A real PostgreSQL server for the tests, started once per session from the machine's own binaries (Debian's
`postgresql` package, which CI installs): `initdb` into a temporary directory, then `postgres` on a free
loopback port. Tests that need it are skipped, saying why, where the binaries are absent.

PostgreSQL refuses to run as root, and CI runs the tests as root: the server then runs as the `postgres`
user the package creates (else `nobody`), through `runuser`. Its superuser `stt` has a password, which
clients take from `PASSWORD_ENV`, as the service does in production (`storage.database_password_env`).
"""

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deployments.config import StorageConfig

PASSWORD_ENV = "STT_TEST_DATABASE_PASSWORD"
USER = "stt"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    password: str

    def url(self, database: str = "postgres") -> str:
        """The database's URL without its password (that is in PASSWORD_ENV)."""
        return f"postgresql://{USER}@{self.host}:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database on this server; its URL (without the password)."""
        import psycopg

        name = f"test_{os.getpid()}_{next(_numbers)}"
        dsn = f"host={self.host} port={self.port} user={USER} password={self.password} dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)


_numbers = itertools.count()


def postgres_binaries() -> Path | None:
    """The directory holding initdb and postgres: Debian's newest /usr/lib/postgresql/<version>/bin, or PATH's."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]), reverse=True)
    if versions:
        return versions[0].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("postgres") else None


def _server_user() -> str | None:
    """Who runs the server: ourselves, unless we are root (then `postgres`, else `nobody`)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL")


def _as(user: str | None, command: list[str]) -> list[str]:
    return command if user is None else ["runuser", "-u", user, "--", *command]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL's binaries (initdb, postgres) are not installed: apt-get install postgresql")
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="stt-postgres-"))
    data, password_file = root / "data", root / "password"
    password = "test-" + os.urandom(8).hex()
    password_file.write_text(password)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chown(password_file, entry.pw_uid, entry.pw_gid)
    initdb = [str(binaries / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={password_file}",
              "--auth-host=scram-sha-256", "--auth-local=trust", "--encoding=UTF8", "--no-sync"]  # fmt: skip
    subprocess.run(_as(user, initdb), check=True, capture_output=True, cwd=root)
    port = _free_port()
    server = subprocess.Popen(
        _as(
            user,
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-h",
                "127.0.0.1",
                "-k",
                str(root),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
        ),
        stdout=subprocess.DEVNULL,
        stderr=open(root / "server.log", "wb"),  # noqa: SIM115 (the server's, closed when it ends)
        cwd=root,
    )
    try:
        _wait_until_accepting(port, password, server, root / "server.log")
        yield PostgresServer("127.0.0.1", port, password)
    finally:
        server.terminate()  # smart shutdown
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database's URL; its password is in the environment, under PASSWORD_ENV."""
    monkeypatch.setenv(PASSWORD_ENV, postgres_server.password)
    return postgres_server.create_database()


def _wait_until_accepting(port: int, password: str, server: subprocess.Popen, log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited at start:\n{log.read_text()}")
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user={USER} password={password} dbname=postgres").close()
            return
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise RuntimeError(f"PostgreSQL did not accept connections in 60 s:\n{log.read_text()}")


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageConfig]:
    """The storage settings of one backend: a SQLite file under state_dir, or a fresh PostgreSQL database (the
    contract tests of every store run on both)."""
    if request.param == "sqlite":
        yield StorageConfig(state_dir=str(tmp_path / "state"))
    else:
        url = request.getfixturevalue("postgres_url")
        yield StorageConfig(state_dir=str(tmp_path / "state"), database_url=url, database_password_env=PASSWORD_ENV)
