"""The HTTP app in-process, over `create_app` with fake handles: no Ray, no models, milliseconds a request.

The fakes answer the same `.method.remote()` calls as the real handles. The rate limiter and the ledger
are the real classes; the pipeline checks URLs with the real SSRF rules and answers with a fixed
transcript (or a rejection for files it is told are bad), so the HTTP layer's rules are tested alone:
auth, rate, funds, form validation, limits, media types, error shapes, rendering.
"""

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from deployments.billing import UsageLedger
from deployments.config import JobsConfig, LimitsConfig, UrlInputConfig
from deployments.errors import AudioRejectedError
from deployments.job_tracker import JobTracker
from deployments.rate_limiter import RequestRateLimiter
from deployments.types import PipelineProgress, PipelineRequest, Transcript
from deployments.url_fetch import check_url
from serve_app.auth import ApiKey, ApiKeys
from serve_app.config import AppConfig
from serve_app.http_app import create_app
from tests.fakes import Actor, Remote
from tests.test_job_tracker import TRANSCRIPT

KEY = "inprocess-key"
LIMITED_KEY = "inprocess-limited"
BROKE_KEY = "inprocess-broke"
UPLOAD_LIMIT = 64 * 1024


class FakePipeline:
    """Answers TRANSCRIPT for any file, except files whose content is b'not audio'."""

    def __init__(self, url_input: UrlInputConfig) -> None:
        self.requests: list[PipelineRequest] = []
        self.check_url = Remote(lambda url: check_url(url, url_input))
        self.transcribe = Remote(self._transcribe)
        self.transcribe_streaming = self

    async def _transcribe(self, request: PipelineRequest) -> Transcript:
        self.requests.append(request)
        if Path(request.source_path).read_bytes() == b"not audio":
            raise AudioRejectedError("audio processing failed: the file is not a readable audio or video container")
        return TRANSCRIPT

    def options(self, stream: bool) -> "FakePipeline":
        return self

    async def remote(self, request: PipelineRequest):  # the streaming call the tracker makes
        yield PipelineProgress(share=0.5)
        yield await self._transcribe(request)


@dataclass
class InProcessService:
    client: httpx.AsyncClient
    pipeline: FakePipeline
    ledger: UsageLedger
    tracker: JobTracker
    state_dir: Path

    def spooled(self) -> list[Path]:
        spool = self.state_dir / "spool"
        return list(spool.iterdir()) if spool.exists() else []


def build(tmp_path: Path) -> tuple[AppConfig, FakePipeline, UsageLedger, ApiKeys]:
    config = AppConfig(
        limits=LimitsConfig(max_upload_bytes=UPLOAD_LIMIT),
        jobs=JobsConfig(state_dir=str(tmp_path / "state"), max_upload_bytes=UPLOAD_LIMIT, max_running_jobs_per_key=2),
    )
    keys = ApiKeys(
        [
            ApiKey(key=KEY, name="test"),
            ApiKey(key=LIMITED_KEY, name="limited", requests_per_second=2),
            ApiKey(key=BROKE_KEY, name="broke", balance_seconds=0),
        ]
    )
    return config, FakePipeline(config.url_input), UsageLedger(config.jobs.database_path), keys


@pytest.fixture
def inprocess(tmp_path: Path) -> Iterator[InProcessService]:
    config, pipeline, ledger, keys = build(tmp_path)
    loop = asyncio.new_event_loop()

    async def start() -> tuple[httpx.AsyncClient, JobTracker]:
        tracker = JobTracker(config.jobs, pipeline, Actor(ledger))
        app = create_app(config, keys, pipeline, Actor(tracker), Actor(ledger), Actor(RequestRateLimiter()))
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://test", headers=_auth(KEY))
        return client, tracker

    client, tracker = loop.run_until_complete(start())
    service = InProcessService(client, pipeline, ledger, tracker, Path(config.jobs.state_dir))
    service.loop = loop
    yield service
    for task in [*tracker.workers.values(), tracker._maintenance]:
        task.cancel()
    loop.run_until_complete(client.aclose())
    loop.close()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def call(service: InProcessService, method: str, path: str, key: str | None = KEY, **kwargs) -> httpx.Response:
    headers = {**kwargs.pop("headers", {}), **(_auth(key) if key else {"Authorization": ""})}
    return service.loop.run_until_complete(service.client.request(method, path, headers=headers, **kwargs))
