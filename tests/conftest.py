"""Shared fixtures. `service` starts the real application once per test session, the way users do:
`serve run` on a config derived from configs/local.yaml (tiny.en for speed, a free port)."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from scripts.local_service import LocalService
from tests.media import SHARED_AUDIO

API_KEYS = ("test-key-1", "test-key-2")


UPLOAD_LIMIT_BYTES = 8 * 1024**2
"""Small upload limits in tests, so that the 413 paths are exercised without gigabytes."""
JOBS_CONFIG = {"max_running_jobs_per_key": 6, "max_concurrent_jobs": 2, "max_upload_bytes": UPLOAD_LIMIT_BYTES}
LIMITS_CONFIG = {"max_upload_bytes": UPLOAD_LIMIT_BYTES}


@dataclass(frozen=True)
class Service:
    base_url: str
    api_key: str
    process: LocalService

    def client(self, api_key: str | None = None, timeout: float = 300) -> httpx.Client:
        key = self.api_key if api_key is None else api_key
        return httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    workdir = tmp_path_factory.mktemp("service")
    with LocalService(
        workdir, list(API_KEYS), model="embedded:tiny.en", jobs=JOBS_CONFIG, limits=LIMITS_CONFIG
    ) as running:
        yield Service(base_url=running.base_url, api_key=API_KEYS[0], process=running)


@pytest.fixture(scope="session")
def jfk_flac() -> Path:
    path = SHARED_AUDIO / "jfk.flac"
    if not path.exists():
        pytest.skip("../shared/audio/jfk.flac is not present (the shared data sits beside the project)")
    return path
