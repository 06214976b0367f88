"""Start the real service with `serve run` on a config derived from configs/local.yaml, for tests and
benchmarks: a free port, chosen API keys and model, and Ctrl-C to stop it, as a user would."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import yaml

from devkit.priority import session_nice, set_session_nice
from serve_app.proxy_limits import CALLBACK as PROXY_CALLBACK
from serve_app.proxy_limits import CALLBACK_ENV as PROXY_CALLBACK_ENV

ROOT = Path(__file__).resolve().parents[1]


class LocalService:
    """The service as `serve run` starts it, in `workdir` (config, log, state); a context manager."""

    def __init__(
        self,
        workdir: Path,
        api_keys: list[str],
        model: str = "embedded:tiny.en",
        jobs: dict[str, Any] | None = None,
        storage: dict[str, Any] | None = None,
        limits: dict[str, Any] | None = None,
        whisper: dict[str, Any] | None = None,
        gpu: bool = False,
        url_input: dict[str, Any] | None = None,
        keys_file: Path | None = None,
        unthrottled: bool = False,
        ingress_replicas: int = 1,
        live: dict[str, Any] | None = None,
        analysis: dict[str, Any] | None = None,
        live_replicas: int = 1,
        metrics_interval_ms: int | None = None,
        env: dict[str, str] | None = None,
        batching: dict[str, Any] | None = None,
        callbacks: dict[str, Any] | None = None,
        app_args: dict[str, Any] | None = None,
    ) -> None:
        self.workdir = workdir
        self.api_keys = api_keys
        self.whisper = {"model": model, **(whisper or {})}
        self.gpu = gpu
        self.url_input = url_input or {}
        self.keys_file = keys_file
        if unthrottled:  # benchmarks measure the service, not its rate limit: their keys get a high one
            self.keys_file = workdir / "keys.yaml"
            entries = [{"key": key, "name": "benchmark", "requests_per_second": 10_000} for key in api_keys]
            self.keys_file.write_text(yaml.safe_dump({"keys": entries}))
            self.api_keys_env = []
        else:
            self.api_keys_env = api_keys
        self.ingress_replicas = ingress_replicas
        self.jobs = dict(jobs or {})
        self.storage = {"state_dir": str(workdir / "state"), **(storage or {})}
        self.limits = dict(limits or {})
        self.live = dict(live or {})
        self.analysis = dict(analysis or {})
        self.live_replicas = live_replicas
        self.metrics_interval_ms = metrics_interval_ms  # how often Ray exports metrics (its default: 10 s)
        self.batching = dict(batching or {})  # the Transcriber's user_config, over the local config's
        self.callbacks = dict(callbacks or {})
        self.app_args = dict(app_args or {})  # more sections of the application's config, as given
        self.env = dict(env or {})  # more environment for `serve run` (and so for every replica)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "local.yaml").read_text())
        config["http_options"] = {"host": "127.0.0.1", "port": self.port}
        args = config["applications"][0]["args"]
        args["whisper"] = {**args["whisper"], **self.whisper}
        ingress = next(d for d in config["applications"][0]["deployments"] if d["name"] == "Ingress")
        ingress["num_replicas"] = self.ingress_replicas
        live = next(d for d in config["applications"][0]["deployments"] if d["name"] == "LiveTranscriber")
        live["num_replicas"] = self.live_replicas
        transcriber = next(d for d in config["applications"][0]["deployments"] if d["name"] == "Transcriber")
        transcriber["user_config"] = {**transcriber.get("user_config", {}), **self.batching}
        if self.gpu:  # the Transcriber gets the GPU; everything else stays on CPU
            transcriber["ray_actor_options"]["num_gpus"] = 1
        args["storage"] = {**args.get("storage", {}), **self.storage}
        args["jobs"] = {**args.get("jobs", {}), **self.jobs}
        args["limits"] = {**args.get("limits", {}), **self.limits}
        args["url_input"] = {**args.get("url_input", {}), **self.url_input}
        args["live"] = {**args.get("live", {}), **self.live}
        args["analysis"] = {**args.get("analysis", {}), **self.analysis}
        if self.callbacks:
            args["callbacks"] = {**args.get("callbacks", {}), **self.callbacks}
        args.update(self.app_args)
        return config

    def start(self, timeout_s: float = 240) -> "LocalService":
        config_path = self.workdir / "config.yaml"
        config_path.write_text(yaml.safe_dump(self.config()))
        env = {
            **os.environ,
            "STT_API_KEYS": ",".join(self.api_keys_env),
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONUNBUFFERED": "1",  # serve.log is current: a failure's log shows what happened just before
            PROXY_CALLBACK_ENV: PROXY_CALLBACK,  # request header limits in Serve's proxy, as the README runs it
            **self.env,
        }
        if self.keys_file is not None:
            env["STT_API_KEYS_FILE"] = str(self.keys_file)
        if self.metrics_interval_ms is not None:
            env["RAY_metrics_report_interval_ms"] = str(self.metrics_interval_ms)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).parent / "serve"), "run", str(config_path)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if (nice := session_nice()) > 0:  # a session of its own: at its starter's priority (devkit.priority)
            set_session_nice(self.process.pid, nice)
        self._wait_until_ready(timeout_s)
        return self

    def _wait_until_ready(self, timeout_s: float) -> None:
        assert self.process is not None, "start() first"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve run exited with {self.process.returncode}:\n{self.log_tail()}")
            if serves(self.base_url, self.api_keys[0]):
                return
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"the service did not become ready in {timeout_s} s:\n{self.log_tail()}")

    def session_dir(self) -> Path:
        """The Ray session directory of this service: `serve run` started its own Ray, whose driver log names
        `serve run`'s process (not /tmp/ray/session_latest: another test's Ray may be newer)."""
        assert self.process is not None, "the service is not running"
        sessions = Path(tempfile.gettempdir(), "ray").glob("session_2*/logs")
        for logs in sorted(sessions, key=lambda path: path.stat().st_mtime, reverse=True):  # a pid is reused: newest
            if any(logs.glob(f"python-core-driver-*_{self.process.pid}.log")):
                return logs.parent
        raise RuntimeError(f"no Ray session of process {self.process.pid} under {tempfile.gettempdir()}/ray")

    def metrics_url(self) -> str:
        """Ray's Prometheus endpoint on this service's node (Ray wrote its free metrics port into the session)."""
        port = next(self.session_dir().glob("metrics_export_port_*")).read_text().strip()
        return f"http://127.0.0.1:{port}/metrics"

    def log_tail(self, chars: int = 5000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Ctrl-C: `serve run` then shuts the application and its local Ray down."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=30)  # a graceful stop takes ~10 s
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._wait_until_port_closed()

    def kill(self) -> None:
        """SIGKILL `serve run`'s process group: its Ray's processes and workers die with it (they share its fate),
        in 2-3 s against a graceful stop's 10-30 s. For an end after which nothing is read: a test session's, a
        benchmark's (a test of what a stop keeps uses `stop` or `restart`)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._wait_until_port_closed()

    def _wait_until_port_closed(self, timeout_s: float = 60) -> None:
        """Ray's proxy is a process of its own and can outlive `serve run` by seconds: a restart must not
        take the old proxy's answers for the new service's."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"port {self.port} still answers {timeout_s} s after the service was stopped")

    def restart(self) -> None:
        """Stop the whole application (and its Ray) and start it again on the same port and state."""
        self.stop()
        self.start()

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.kill()


def serves(base_url: str, api_key: str) -> bool:
    """The service answers an authenticated request: ready, not merely listening (the proxy starts first)."""
    try:
        return httpx.get(f"{base_url}/v1/models", headers={"Authorization": f"Bearer {api_key}"}, timeout=5).is_success
    except httpx.HTTPError:
        return False


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
