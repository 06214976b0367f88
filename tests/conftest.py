"""Shared fixtures. `service` starts the real application once per test session, the way users do:
`serve run` on a config derived from configs/local.yaml (tiny.en for speed, a free port)."""

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

from deployments.files._decode import decode_audio
from scripts.local_service import LocalService
from tests.media import SHARED_AUDIO, encode, pyannote_sample
from tests.media_server import media_server

pytest_plugins = ["tests.inprocess", "tests.postgres"]
"""Fixtures defined beside their helpers and available to every test module: `inprocess` (the HTTP app with fake
handles, tests/inprocess.py), `postgres_server` and `postgres_url` (a throwaway PostgreSQL, tests/postgres.py)."""

API_KEYS = ("test-key-1", "test-key-2")


UPLOAD_LIMIT_BYTES = 8 * 1024**2
"""Small upload limits in tests, so that the 413 paths are exercised without gigabytes."""
JOBS_CONFIG = {
    "max_running_jobs_per_key": 6,
    "max_concurrent_jobs": 2,
    "max_job_upload_bytes": UPLOAD_LIMIT_BYTES,
    "retry_interval_s": 1,
}
STATE_FILESYSTEM_BYTES = 256 * 1024**2
"""The test service's storage.state_dir is a filesystem of its own of this size where the machine allows a
tmpfs mount (root), so that a test can fill it: tests/test_storage_service.py."""
LIMITS_CONFIG = {"max_sync_upload_bytes": UPLOAD_LIMIT_BYTES}
LIVE_CONFIG = {"idle_timeout_s": 3, "max_sessions_per_key": 2}
"""A short idle timeout and a small session cap, so that tests reach them quickly."""
ANALYSIS_CONFIG = {"max_output_tokens": 32, "sync_timeout_s": 10}
"""Short answers (the embedded model writes ~15 tokens/s on 2 cores), and a synchronous budget that two
minutes of the call with a prompt, roles and emotions outrun: tests/test_analysis_service.py's 413."""
URL_INPUT_CONFIG = {"allowed_networks": ["127.0.0.1/32"], "read_timeout_s": 2}
"""Tests fetch from a server on loopback, which only an allow-list opens; every other private range stays shut."""


@dataclass(frozen=True)
class Service:
    base_url: str
    api_key: str
    process: LocalService
    state_dir: Path
    state_on_own_filesystem: bool

    def client(self, api_key: str | None = None, timeout: float = 300) -> httpx.Client:
        key = self.api_key if api_key is None else api_key
        return httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


KEYS_FILE = {
    "keys": [
        {"key": "test-key-limited", "name": "limited", "requests_per_second": 2},
        {"key": "test-key-broke", "name": "broke", "balance_seconds": 0},
        {"key": "test-key-prepaid", "name": "prepaid", "balance_seconds": 5},
        {"key": "test-key-fuzz", "name": "fuzzing and hostile-input tests", "requests_per_second": 1000},
        {"key": "test-key-priced", "id": 42, "name": "sdk", "balance": 50.0, "rate_per_min": 0.6, "currency": "RUB"},
        {"key": "test-key-live", "id": 43, "name": "live", "balance": 5.0, "rate_per_min": 0.6, "currency": "RUB"},
        {"key": "test-key-live-short", "name": "live, 4 s", "balance_seconds": 4},
        {
            "key": "test-key-analysis",
            "id": 44,
            "name": "analysis",
            "balance": 50.0,
            "rate_per_min": 0.6,
            "currency": "RUB",
        },  # fmt: skip
    ]
}
"""Keys with a balance or their own limits, from STT_API_KEYS_FILE; API_KEYS come from STT_API_KEYS."""


LOG_DIGEST_PATTERN = re.compile(r"WARNING|ERROR|Error|File \"|decoded \d+ chunks|CALL transcribe(_streaming)? ")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A failed test that used the service shows the service's recent warnings, errors and batches: a CI
    run's failure then says what the service was doing, not only what the client saw."""
    report = yield
    service = getattr(item, "funcargs", {}).get("service")
    if report.failed and isinstance(service, Service) and service.process.log_path.exists():
        lines = service.process.log_path.read_text(errors="replace").splitlines()
        digest = [ANSI_ESCAPE.sub("", line)[:400] for line in lines if LOG_DIGEST_PATTERN.search(line)]
        report.sections.append(("the service's log: warnings, errors and batches", "\n".join(digest[-100:])))
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow fault tests run after the rest, and a test that redeploys the shared service with another
    config runs last of all (it leaves that config in place)."""
    items.sort(
        key=lambda item: (item.get_closest_marker("redeploys") is not None, item.get_closest_marker("slow") is not None)
    )


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    workdir = tmp_path_factory.mktemp("service")
    keys_file = workdir / "keys.yaml"
    keys_file.write_text(yaml.safe_dump(KEYS_FILE))
    state_dir = workdir / "state"
    state_dir.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={STATE_FILESYSTEM_BYTES}", "tmpfs", str(state_dir)]
    mounted = shutil.which("mount") is not None and subprocess.run(mount, capture_output=True).returncode == 0
    try:
        with LocalService(
            workdir,
            list(API_KEYS),
            model="embedded:tiny.en",
            jobs=JOBS_CONFIG,
            storage={"state_dir": str(state_dir)},
            limits=LIMITS_CONFIG,
            url_input=URL_INPUT_CONFIG,
            live=LIVE_CONFIG,
            analysis=ANALYSIS_CONFIG,
            keys_file=keys_file,
            ingress_replicas=2,  # two ingress replicas: the request-rate limit must hold across both
            live_replicas=2,  # and two of live sessions: each session's calls must find its replica
            metrics_interval_ms=1000,  # Ray exports metrics each second, not every 10 s: tests see them sooner
        ) as running:
            yield Service(running.base_url, API_KEYS[0], running, state_dir, state_on_own_filesystem=mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(state_dir)], capture_output=True)


@pytest.fixture(scope="session")
def media_url() -> Iterator[str]:
    """Base URL of a loopback server with audio, redirects and failures to fetch (tests/media_server.py)."""
    with media_server() as base_url:
        yield base_url


@pytest.fixture(scope="session")
def jfk_flac() -> Path:
    path = SHARED_AUDIO / "jfk.flac"
    if not path.exists():
        pytest.skip("../shared/audio/jfk.flac is not present (the shared data sits beside the project)")
    return path


GREETING = slice(6 * 16_000, 10 * 16_000)
"""6-10 s of pyannote's call: "Hello? Hello? Oh, hello. I didn't know you were there." """


@pytest.fixture(scope="session")
def call_samples() -> np.ndarray:
    """pyannote's 30 s two-speaker call, decoded to 16 kHz mono."""
    return decode_audio(pyannote_sample()).samples


@pytest.fixture(scope="session")
def greeting(call_samples: np.ndarray) -> bytes:
    """The call's greeting as a wav file: one speaker, 4 s."""
    return encode(call_samples[GREETING], "wav")
