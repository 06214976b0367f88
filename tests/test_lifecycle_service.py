"""A redeploy with a changed config (`serve deploy` onto the running application) takes effect for jobs and
the request rate, although the job tracker and the rate limiter are detached actors that outlive it."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from devkit.media import encode
from tests.conftest import API_KEYS, Service
from tests.test_jobs_service import ASYNC


def _deploy(service: Service, config: dict) -> None:
    log = service.process.log_path.read_text(errors="replace")
    dashboard = re.search(r"dashboard at \S*?(\d+\.\d+\.\d+\.\d+:\d+)", log)
    address = f"http://{dashboard.group(1) if dashboard else '127.0.0.1:8265'}"
    path = service.process.workdir / "redeploy.yaml"
    path.write_text(yaml.safe_dump(config))
    serve = Path(sys.executable).parent / "serve"
    env = dict(os.environ)
    token = Path.home() / ".ray" / "auth_token"  # Ray's dashboard asks for the cluster's token, if it has one
    if token.exists():
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token.read_text().strip())
    command = [str(serve), "deploy", str(path), "--address", address]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def _until(condition, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(1)
    raise AssertionError("the redeployed config never took effect")


@pytest.mark.slow
@pytest.mark.redeploys
def test_a_redeployed_config_takes_effect_for_jobs_and_the_rate_limit(
    service: Service, speech_samples: np.ndarray, speech_wav: bytes
) -> None:
    original = service.process.config()
    changed = yaml.safe_load(yaml.safe_dump(original))
    args = changed["applications"][0]["args"]
    args["jobs"]["max_running_jobs_per_key"] = 1
    args["limits"]["requests_per_second"] = 3
    key = API_KEYS[1]  # an STT_API_KEYS key: the app-wide rate applies to it
    _deploy(service, changed)  # not deployed back: this test runs last (tests/conftest.py orders it so)

    def rate_is_three() -> bool:
        time.sleep(1.1)  # a full bucket
        with service.client(api_key=key) as client:
            codes = [client.get("/v1/models").status_code for _ in range(6)]
        return codes.count(200) == 3

    _until(rate_is_three)
    long_wav = encode(np.tile(speech_samples, 20), "wav")  # its job still runs when the second arrives
    with service.client(api_key=key) as client:
        time.sleep(1.1)
        first = client.post(ASYNC, files={"file": ("long.wav", long_wav)})
        time.sleep(0.4)
        second = client.post(ASYNC, files={"file": ("a.wav", speech_wav)})
    assert first.status_code == 200
    assert second.status_code == 429 and "may have 1 at once" in second.json()["detail"]
