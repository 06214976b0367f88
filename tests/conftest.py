"""Shared fixtures. `service` starts the real application once per test session, the way users do:
`serve run` on a config derived from configs/local.yaml (tiny.en for speed, a free port)."""

import re
import shutil
import subprocess
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest
import yaml

from deployments.config import WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from devkit.local_service import LocalService
from devkit.media import SHARED_AUDIO, encode, pyannote_sample
from devkit.media_server import media_server
from devkit.priority import lower_priority

pytest_plugins = ["tests.inprocess", "tests.postgres"]
"""Fixtures defined beside their helpers and available to every test module: `inprocess` (the HTTP app with fake
handles, tests/inprocess.py), `postgres_server` and `postgres_url` (a throwaway PostgreSQL, tests/postgres.py)."""

API_KEYS = ("test-key-1", "test-key-2")
ADMIN_KEY = "test-admin-key-0123456789abcdef"
"""The test service's admin key (STT_ADMIN_KEYS): tests/test_admin_service.py."""


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
ANALYSIS_CONFIG = {"max_output_tokens": 32}
"""Short answers (the embedded model writes ~15 tokens/s on 2 cores)."""
CALLBACKS_CONFIG = {"allowed_networks": ["127.0.0.0/8"], "backoff_base_s": 0.5, "backoff_max_s": 4}
CALLBACK_SECRET = "test-callback-secret"
"""Callbacks to a receiver on loopback, retried within seconds, signed with STT_CALLBACK_SECRET."""
ASR_WEBSERVICE_CONFIG = {"enabled": True, "api_key_name": "asr-webservice", "allowed_networks": ["127.0.0.0/8"]}
"""whisper-asr-webservice's routes on, for callers on loopback, charged to their own key:
tests/test_asr_webservice_service.py (off by default: tests/test_asr_webservice.py)."""
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
        },
        {"key": "test-key-asr-webservice", "name": "asr-webservice", "balance": 50.0, "rate_per_min": 0.6},
    ]
}
"""Keys with a balance or their own limits, from STT_API_KEYS_FILE; API_KEYS come from STT_API_KEYS."""


LOG_DIGEST_PATTERN = re.compile(r"WARNING|ERROR|Error|File \"|decoded \d+ chunks|CALL transcribe(_streaming)? ")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that used the service shows the service's recent warnings, errors and batches: a CI
    run's failure then says what the service was doing, not only what the client saw."""
    report = yield
    service = getattr(item, "funcargs", {}).get("service")
    if report.failed and isinstance(service, Service) and service.process.log_path.exists():
        lines = service.process.log_path.read_text(errors="replace").splitlines()
        digest = [ANSI_ESCAPE.sub("", line)[:400] for line in lines if LOG_DIGEST_PATTERN.search(line)]
        report.sections.append(("the service's log: warnings, errors and batches", "\n".join(digest[-100:])))
    return report


RAY_GROUP = "ray"
"""The xdist group of every test that uses the shared `service` (one `serve run` per worker that needs it, so all
its tests on one worker). `--dist loadgroup` puts the group on one worker."""
OWN_RAY_GROUP = "own-ray"
"""The xdist group of the `slow` tests that start a Ray instance of their own (a multi-node cluster on PostgreSQL,
`stt batch`'s Ray) and use no shared service: one at a time, on the other worker once its unit and
component tests are done (`--no-loadscope-reorder` keeps the collection's order: RAY_GROUP first, OWN_RAY_GROUP
last), at a lower CPU priority (OWN_RAY_NICE). Nothing reads another instance's files: each test finds its Ray by
its own process (devkit.local_service's `session_dir`; a tracker is killed by its process, devkit.faults)."""
OWN_RAY_NICE = 15
"""The CPU priority (nice) of OWN_RAY_GROUP's processes, and of their session (devkit.priority): they take the CPU
the shared service's live sessions, streamed at their pace, leave idle (more than half of 2 cores), and yield it
to them when both want it (at an equal share, the call streamed at real time lost its second readings: 19% of
its words from the file's instead of under 6%)."""
OWN_RAY_FIXTURES = {"cluster"}
"""Fixtures that start a Ray instance (and the service) of their own: tests/test_cluster_service.py's multi-node
cluster (on PostgreSQL where it is installed). Their tests are `slow`."""
COMPONENT_MODULES = {
    "test_batch_s3_run": "Whisper tiny.en through `stt batch` on a bucket",
    "test_batch_manifest_run": "Whisper tiny.en and the diarization models through `stt batch` on a manifest",
    "test_analysis_models": "SmolLM2 in llama.cpp",
    "test_audio_emotions": "the audio emotion classifier (transformers)",
    "test_code_switching": "Whisper base on German and English speech",
    "test_ctranslate2_engine": "Whisper tiny.en and base in CTranslate2",
    "test_diarization_models": "segmentation-3.0 (ONNX), CAM++ and resemblyzer",
    "test_short_window": "Whisper tiny.en in CTranslate2",
    "test_storage_contract": "a PostgreSQL server",
    "test_key_store_contract": "a PostgreSQL server",
    "test_live_finals": "Whisper base streamed live in the test process",
    "test_transformers_engine": "Whisper tiny.en in transformers and CTranslate2",
    "test_translations": "Whisper base in transformers and CTranslate2",
    "test_redaction": "Presidio with spaCy's English model",
}
"""Modules whose tests load real models (or start a database) in the test process: the `component` tier, with
what each loads. Their tests take seconds to minutes, not milliseconds."""
TIERS = ("unit", "component", "service")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """With pytest-xdist disabled (`-p no:xdist`) or not installed, the `--numprocesses`/`--dist` of pyproject's
    addopts are accepted and ignored, so that the suite still runs, in one process."""
    if pluginmanager.has_plugin("xdist") or pluginmanager.has_plugin("xdist.plugin"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: these are ignored")
    group.addoption("--numprocesses", dest="numprocesses", default=None, help="ignored without pytest-xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored without pytest-xdist")
    group.addoption("--no-loadscope-reorder", action="store_false", dest="loadscopereorder", help="ignored too")


def _fixtures(item: pytest.Item) -> set[str]:
    """The fixtures a test uses, its whole closure (a test function's; other items use none)."""
    return set(getattr(item, "fixturenames", ()))


def _tier(item: pytest.Item) -> str | None:
    """`service` when the test's fixtures include the shared service; none when it starts a Ray instance of its own
    (it is `slow`); `component` when its module loads real models; `unit` otherwise (no Ray, no service, no model:
    the in-process app, pure functions, fakes)."""
    fixtures = _fixtures(item)
    if "service" in fixtures:
        return "service"
    if OWN_RAY_FIXTURES & fixtures:
        return None
    module = getattr(item, "module", None)  # a test function's (pytest.Function); other items have none
    if module is not None and module.__name__.rpartition(".")[2] in COMPONENT_MODULES:
        return "component"
    return "unit"


def _named_on_the_command_line(item: pytest.Item, config: pytest.Config) -> bool:
    node = item.nodeid.partition("[")[0]
    return any(arg.partition("[")[0].replace("\\", "/").endswith(node) for arg in config.args if "::" in arg)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups and before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tiers, from what each test uses (pyproject.toml's markers say what each means):

    - `service`: it uses the shared `serve run` (the `service` fixture); `unit` and `component` otherwise, by
      COMPONENT_MODULES; a test that starts a Ray cluster or service of its own (OWN_RAY_FIXTURES) is `slow`.
    - Every test of the shared service is in one xdist group (RAY_GROUP), so with `-n 2 --dist loadgroup` one
      worker runs them in the order below while the other runs the unit and component tests, then the `slow`
      tests with a Ray of their own (OWN_RAY_GROUP), at a lower CPU priority.
    - `bench` tests (a measured figure, no behaviour) are left out unless `-m` names `bench` or the test is named
      on the command line.

    Live sessions streamed at their pace (`paced`) run after the other service tests, when the other worker's
    model tests are likely done (CPU they would share skews their words), slow fault tests after them, and a
    test that redeploys the shared service with another config runs
    last of all (it leaves that config in place)."""
    benches = "bench" in (config.option.markexpr or "")
    kept, left_out = [], []
    for item in items:
        if item.get_closest_marker("bench") and not benches and not _named_on_the_command_line(item, config):
            left_out.append(item)
            continue
        kept.append(item)
        tier = _tier(item)
        if tier is not None:
            item.add_marker(tier)
        if OWN_RAY_FIXTURES & _fixtures(item):
            item.add_marker("slow")
        if tier == "service":
            item.add_marker(pytest.mark.xdist_group(RAY_GROUP))
        elif item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group(OWN_RAY_GROUP))
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
    items.sort(
        key=lambda item: (
            _group_rank(item),
            item.get_closest_marker("redeploys") is not None,
            item.get_closest_marker("slow") is not None,
            item.get_closest_marker("paced") is not None,
        )
    )


def _group(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker is not None and marker.args else None


def _group_rank(item: pytest.Item) -> int:
    """RAY_GROUP first (its worker starts the service at once), OWN_RAY_GROUP last (after the unit and component
    tests on the other worker)."""
    return {RAY_GROUP: 0, OWN_RAY_GROUP: 2}.get(_group(item) or "", 1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """OWN_RAY_GROUP's tests, and every process they start, run at OWN_RAY_NICE, in a session of their own: set
    before any fixture of the test (a module's cluster too) starts (a nice only rises: the rest of this worker's
    tests are done by then)."""
    if _group(item) == OWN_RAY_GROUP:
        lower_priority(OWN_RAY_NICE)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """The contract the one-service design rests on: under `--dist loadgroup` xdist marks each grouped test by
    appending `@<group>` to its node id (its documented behaviour, which pytest 9.2 breaks: pytest-dev/pytest-xdist
    #1386, hence pyproject's `pytest<9.2`). Without it the Ray tests would be spread over both workers, each
    starting a service of its own: stop before running anything."""
    if getattr(session.config, "workerinput", None) is None or session.config.getvalue("dist") != "loadgroup":
        return
    ungrouped = [
        item.nodeid for item in session.items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid
    ]
    if ungrouped:
        raise pytest.UsageError(
            f"pytest-xdist ignored the xdist_group of {len(ungrouped)} tests (e.g. {ungrouped[0]}): this pytest and"
            " pytest-xdist do not group tests; install the versions pyproject.toml pins"
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
            callbacks=CALLBACKS_CONFIG,
            app_args={"asr_webservice": ASR_WEBSERVICE_CONFIG},
            env={"STT_ADMIN_KEYS": ADMIN_KEY, "STT_CALLBACK_SECRET": CALLBACK_SECRET},
        ) as running:
            yield Service(running.base_url, API_KEYS[0], running, state_dir, state_on_own_filesystem=mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(state_dir)], capture_output=True)


@pytest.fixture(scope="session")
def media_url() -> Iterator[str]:
    """Base URL of a loopback server with audio, redirects and failures to fetch (devkit/media_server.py)."""
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
SPEECH = slice(6 * 16_000, 13 * 16_000)
"""6-13 s of pyannote's call: the greeting and what follows it, one speaker, 7 s."""


@pytest.fixture(scope="session")
def call_samples() -> np.ndarray:
    """pyannote's 30 s two-speaker call, decoded to 16 kHz mono."""
    return decode_audio(pyannote_sample()).samples


@pytest.fixture(scope="session")
def greeting_samples(call_samples: np.ndarray) -> np.ndarray:
    """The call's greeting (GREETING), 16 kHz mono samples: one speaker, 4 s."""
    return call_samples[GREETING]


@pytest.fixture(scope="session")
def greeting(greeting_samples: np.ndarray) -> bytes:
    """The call's greeting as a wav file: one speaker, 4 s."""
    return encode(greeting_samples, "wav")


@pytest.fixture(scope="session")
def speech_samples(call_samples: np.ndarray) -> np.ndarray:
    """SPEECH, 16 kHz mono samples: one speaker, 7 s."""
    return call_samples[SPEECH]


@pytest.fixture(scope="session")
def speech_wav(speech_samples: np.ndarray) -> bytes:
    """SPEECH as a wav file: "Hello? ... I didn't know you were there." """
    return encode(speech_samples, "wav")


@pytest.fixture(scope="session")
def tiny() -> CTranslate2Engine:
    """Whisper tiny.en (embedded) in the CTranslate2 engine on 2 threads, in this process: engine-level tests."""
    return CTranslate2Engine(WhisperModelConfig(model="embedded:tiny.en", cpu_threads=2))


@pytest.fixture(scope="session")
def openai_client(service: Service) -> openai.OpenAI:
    """The `openai` SDK on the shared service with its first key (no retries: a test sees the first answer)."""
    return openai.OpenAI(api_key=service.api_key, base_url=f"{service.base_url}/v1", max_retries=0, timeout=300)
