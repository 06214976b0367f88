"""The HTTP app in-process, over `create_app` with fake handles in its `Services`: no Ray, no models, milliseconds
a request.

The fakes answer the same `.method.remote()` calls as the real handles. The rate limiter and the ledger
are the real classes; the pipeline checks URLs with the real SSRF rules and answers with a fixed
transcript (or a rejection for files it is told are bad), so the HTTP layer's rules are tested alone:
auth, rate, funds, form validation, limits, media types, error shapes, rendering.
"""

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from deployments.analysis.emotions import emotion
from deployments.billing.ledger import UsageLedger
from deployments.billing.rate_limiter import RequestRateLimiter
from deployments.config import CallbacksConfig, JobsConfig, LimitsConfig, StorageConfig, UrlInputConfig
from deployments.errors import AudioRejectedError
from deployments.files._url_fetch import check_url
from deployments.jobs.reader import JobReader
from deployments.jobs.tracker import JobTracker
from deployments.keys.store import KeyStore
from deployments.live.events import LiveEvent, SessionEnded, SessionReady, SessionSettings
from deployments.types import (
    Analysis,
    AnalysisOptions,
    DiarizedSegment,
    DiarizedTranscript,
    DiarizedWord,
    PipelineProgress,
    PipelineRequest,
    PipelineResult,
    PipelineText,
    SpeakerSummary,
)
from serve_app.common.auth import AdminKeys, ApiKey, ApiKeys
from serve_app.common.services import Services
from serve_app.config import AppConfig
from serve_app.http_app import AppArgs, create_app
from tests.fakes import Actor, Remote
from tests.test_job_tracker import TRANSCRIPT

KEY = "inprocess-key"
LIMITED_KEY = "inprocess-limited"
BROKE_KEY = "inprocess-broke"
PRICED_KEY = "inprocess-priced"
ADMIN_KEY = "inprocess-admin-key-0123456789"
CALLBACK_KEY = "inprocess-callbacks"
CALLBACK_SECRET = "inprocess-callback-secret"
"""The one key with a callback secret (the in-process service has no STT_CALLBACK_SECRET)."""
UPLOAD_LIMIT = 64 * 1024


HELLO, THERE = (DiarizedWord(word=" Hello", start=0.0, end=1.0, prob=0.9, speaker="speaker_0"),
                DiarizedWord(word=" there.", start=1.2, end=2.5, prob=0.9, speaker="speaker_1"))  # fmt: skip
DIARIZED = DiarizedTranscript(
    text="Hello there.",
    language="en",
    duration=2.5,
    speakers=[
        SpeakerSummary(speaker="speaker_0", speaking_time=1.0),
        SpeakerSummary(speaker="speaker_1", speaking_time=1.3),
    ],
    segments=[
        DiarizedSegment(id=0, start=0.0, end=1.0, text="Hello", speaker="speaker_0", words=[HELLO]),
        DiarizedSegment(id=1, start=1.2, end=2.5, text="there.", speaker="speaker_1", words=[THERE]),
    ],
    words=[HELLO, THERE],
)
"""What task=diarize gets: two speakers, a word each."""


def made_up_analysis(transcript: PipelineResult, options: AnalysisOptions) -> Analysis:
    """What the fake Analyzer answers: an answer of the asked shape, roles from the asked ones, emotions."""
    answer: str | dict | None = None
    if options.prompt is not None:
        answer = {"summary": "a greeting"} if options.json_schema is not None else "A greeting."
    roles = {}
    if options.roles is not None and isinstance(transcript, DiarizedTranscript):
        names = ["caller", "agent"] if options.roles == "auto" else list(options.roles)
        roles = {speaker.speaker: names[index % len(names)] for index, speaker in enumerate(transcript.speakers)}
    emotions = [emotion("positive", 0.8), None] if options.emotions else []
    return Analysis(llm_output=answer, roles=roles, emotions=emotions, llm_input_tokens=120, llm_output_tokens=8)


class FakePipeline:
    """Answers TRANSCRIPT (DIARIZED for task=diarize) for any file, except files whose content is b'not audio';
    with an analysis asked, `analysis` (an exception is raised) or a made-up one."""

    def __init__(self, url_input: UrlInputConfig) -> None:
        self.analysis: Analysis | Exception | None = None
        self.requests: list[PipelineRequest] = []
        self.gate: asyncio.Event | None = None  # when set: jobs wait for it after their progress event
        self.check_url = Remote(lambda url: check_url(url, url_input))
        self.transcribe = Remote(self._transcribe)
        self.transcribe_streaming = self

    async def _transcribe(self, request: PipelineRequest) -> PipelineResult:
        self.requests.append(request)
        if Path(request.source_path).read_bytes() == b"not audio":
            raise AudioRejectedError("audio processing failed: the file is not a readable audio or video container")
        result: PipelineResult = TRANSCRIPT if request.diarization is None else DIARIZED
        if request.analysis is None or not request.analysis.wanted:
            return result
        if isinstance(self.analysis, Exception):
            raise self.analysis
        analysis = self.analysis or made_up_analysis(result, request.analysis)
        return result.model_copy(update={"analysis": analysis})

    def options(self, stream: bool) -> "FakePipeline":
        return self

    def remote(self, request: PipelineRequest) -> "FakeResponseStream":  # the streaming call of jobs and stream=true
        return FakeResponseStream(self._events(request))

    async def _events(self, request: PipelineRequest):
        if Path(request.source_path).read_bytes() == b"not audio":
            await self._transcribe(request)  # refused before any event, as the real pipeline does
        yield PipelineProgress(share=0.5)
        if self.gate is not None:
            await self.gate.wait()
        if request.stream_text:
            for segment in TRANSCRIPT.segments:
                yield PipelineText(text=segment.text)
        yield await self._transcribe(request)


class FakeResponseStream:
    """A DeploymentResponseGenerator's part that the service uses: async iteration and `cancel()`."""

    def __init__(self, events) -> None:
        self.events, self.cancelled = events, False

    def __aiter__(self) -> "FakeResponseStream":
        return self

    async def __anext__(self):
        return await self.events.__anext__()

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class InProcessService:
    client: httpx.AsyncClient
    pipeline: FakePipeline
    ledger: UsageLedger
    tracker: JobTracker
    state_dir: Path
    config: AppConfig
    services: Services | None = None
    loop: asyncio.AbstractEventLoop = field(init=False, repr=False)  # the fixture's, set once it is built

    def spooled(self) -> list[Path]:
        spool = self.state_dir / "spool"
        return list(spool.iterdir()) if spool.exists() else []


def build(tmp_path: Path) -> tuple[AppConfig, FakePipeline, UsageLedger, ApiKeys]:
    config = AppArgs(  # with the protocols' sections, as Serve's args are
        model_ids=["whisper-1", "whisper-base", "nexara-ru"],
        limits=LimitsConfig(max_sync_upload_bytes=UPLOAD_LIMIT),
        storage=StorageConfig(state_dir=str(tmp_path / "state")),
        jobs=JobsConfig(max_job_upload_bytes=UPLOAD_LIMIT, max_running_jobs_per_key=2),
        callbacks=CallbacksConfig(allowed_networks=["127.0.0.0/8"], backoff_base_s=0.2, backoff_max_s=1),
    )
    ledger = UsageLedger(config.storage.database_path)  # first: it makes the schema
    keys = ApiKeys(
        [
            ApiKey(key=KEY, name="test"),
            ApiKey(key=LIMITED_KEY, name="limited", requests_per_second=2),
            ApiKey(key=BROKE_KEY, name="broke", balance_seconds=0),
            ApiKey(key=PRICED_KEY, id=7, balance=1.0, rate_per_min=0.6, currency="RUB"),
            ApiKey(key=CALLBACK_KEY, name="callbacks", callback_secret=CALLBACK_SECRET),
        ],
        KeyStore(config.storage),  # the admin API's keys (ADMIN_KEY manages them)
    )
    return config, FakePipeline(config.url_input), ledger, keys


@pytest.fixture
def inprocess(tmp_path: Path) -> Iterator[InProcessService]:
    config, pipeline, ledger, keys = build(tmp_path)
    loop = asyncio.new_event_loop()

    async def start() -> tuple[httpx.AsyncClient, JobTracker, Services]:
        tracker = JobTracker(config.jobs, config.storage, pipeline, Actor(ledger))  # type: ignore[arg-type]  # fakes for the Ray handles
        services = Services(
            config=config,
            api_keys=keys,
            pipeline=pipeline,  # type: ignore[arg-type]  # a fake for the Ray handle
            tracker=Actor(tracker),  # type: ignore[arg-type]  # a fake for the Ray handle
            jobs=JobReader(config.jobs, config.storage, callbacks=config.callbacks),
            ledger=Actor(ledger),  # type: ignore[arg-type]  # a fake for the Ray handle
            rate_limiter=Actor(RequestRateLimiter()),  # type: ignore[arg-type]  # a fake for the Ray handle
            admin_keys=AdminKeys([ADMIN_KEY]),
            key_store=keys.store,
        )
        app = create_app(services)
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://test", headers=_auth(KEY))
        return client, tracker, services

    client, tracker, services = loop.run_until_complete(start())
    service = InProcessService(client, pipeline, ledger, tracker, Path(config.storage.state_dir), config, services)
    service.loop = loop
    yield service
    for task in [*tracker.runner.workers.values(), tracker._maintenance]:
        task.cancel()
    loop.run_until_complete(client.aclose())
    loop.close()


class FakeLive:
    """A LiveTranscriber's calls, answered in the test's loop: what the edge opens, pushes, commits and closes is
    recorded; a session streams SessionReady, the events the hooks below put in `outbox` (none here: subclasses
    say what a session hears), then after end_input SessionEnded with `text`, billed `pushed` at `bytes_per_ms`."""

    session_id = "live-1"
    bytes_per_ms = 32  # 16 kHz pcm_s16le
    text = ""

    def __init__(self) -> None:
        self.settings: list[SessionSettings] = []
        self.pushed = bytearray()
        self.commits = 0
        self.closed: list[str] = []
        self.open = Remote(self._open)
        self.push = Remote(self._push)
        self.commit = Remote(self._commit)
        self.clear = Remote(lambda session_id: None)
        self.end_input = Remote(lambda session_id: self._put([*self.ended(), None]))
        self.close = Remote(self._close)
        self.ledger: UsageLedger | None = None  # set by live_app: closing charges the session, as the real one does
        self.touches = 0
        self.touch = Remote(self._touch)
        self.events = self

    def _touch(self, session_id: str) -> None:
        self.touches += 1

    def _close(self, session_id: str) -> None:
        """Recorded, and charged once for what was pushed on the terms the edge gave (the LiveTranscriber's rule)."""
        if session_id in self.closed:
            return
        self.closed.append(session_id)
        billing = self.settings[-1].billing if self.settings else None
        if self.ledger is not None and billing is not None and self.pushed:
            details = billing.details.model_copy(update={"bytes": len(self.pushed)})
            self.ledger.charge(session_id, billing.owner, self.settings[-1].billed_s(len(self.pushed)), details)

    def heard(self, frames: bytes) -> list[LiveEvent]:
        """The events a push brings."""
        return []

    def committed(self) -> list[LiveEvent]:
        """The events a commit brings."""
        return []

    def ended(self) -> list[LiveEvent]:
        """The events the end of input brings, before SessionEnded."""
        return []

    def _open(self, settings: SessionSettings) -> str:
        self.settings.append(settings)
        self.outbox: asyncio.Queue[LiveEvent | None] = asyncio.Queue()
        return self.session_id

    def _push(self, session_id: str, frames: bytes) -> None:
        self.pushed += frames
        self._put(self.heard(frames))

    def _commit(self, session_id: str) -> None:
        self.commits += 1
        self._put(self.committed())

    def _put(self, events: Sequence[LiveEvent | None]) -> None:
        for event in events:
            self.outbox.put_nowait(event)

    def options(self, stream: bool) -> "FakeLive":
        return self

    def remote(self, session_id: str) -> AsyncIterator[LiveEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[LiveEvent]:
        yield SessionReady()
        while (event := await self.outbox.get()) is not None:
            yield event
        ms = len(self.pushed) // self.bytes_per_ms
        yield SessionEnded(audio_duration_ms=ms, channels_transcribed=1, billed_ms=ms, text=self.text)


@contextmanager
def live_app(tmp_path: Path, live: object, keys: list[ApiKey]) -> Iterator[tuple[TestClient, UsageLedger]]:
    """The app with `live` as its LiveTranscriber (a fake), the real ledger and rate limiter and no job tracker,
    in a TestClient (which speaks WebSocket), for `keys`."""
    config, pipeline, ledger, _ = build(tmp_path)
    if isinstance(live, FakeLive):
        live.ledger = ledger
    services = Services(
        config,
        ApiKeys(keys),
        pipeline,  # type: ignore[arg-type]  # a fake for the Ray handle
        None,  # type: ignore[arg-type]  # no jobs here: no tracker
        None,
        Actor(ledger),  # type: ignore[arg-type]  # a fake for the Ray handle
        Actor(RequestRateLimiter()),  # type: ignore[arg-type]  # a fake for the Ray handle
        live=live,  # type: ignore[arg-type]  # a fake for the Ray handle
    )
    with TestClient(create_app(services)) as client:
        yield client, ledger


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def call(service: InProcessService, method: str, path: str, key: str | None = KEY, **kwargs) -> httpx.Response:
    headers = {**kwargs.pop("headers", {}), **(_auth(key) if key else {"Authorization": ""})}
    return service.loop.run_until_complete(service.client.request(method, path, headers=headers, **kwargs))
