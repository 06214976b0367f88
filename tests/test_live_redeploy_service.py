"""Live sessions of each protocol while the Ingress is redeployed under them: the old replica's grace period
ends with the sessions still streaming, and Ray kills it (no handler's `finally` runs). Each session is closed
on the LiveTranscriber and charged exactly once for the audio it received all the same: the LiveTranscriber
charges it when its `events` call is cancelled (before, none of the three was charged)."""

import asyncio
import contextlib
import threading
import time
from typing import Any

import numpy as np
import pytest
import websockets
import yaml

from devkit.prometheus import scrape, value
from tests.conftest import Service
from tests.test_lifecycle_service import _deploy
from tests.test_live_vanish_service import FRAME_S, PROTOCOLS, Sender, _new_keys, _usage

GRACE_S = 3
"""The Ingress's graceful_shutdown_timeout_s in the redeployed config: sessions outlive it."""


async def _stream_until_closed(url: str, scheme: str, key: str, send: Sender, audio: np.ndarray) -> float:
    """The audio over and over, a frame at a time, until the server ends the session; the seconds sent."""
    sent, frame = 0.0, int(16_000 * FRAME_S)
    with contextlib.suppress(websockets.ConnectionClosed, OSError):
        async with websockets.connect(url, additional_headers={"Authorization": f"{scheme} {key}"}) as ws:
            while True:
                for start in range(0, len(audio), frame):
                    await send(ws, audio[start : start + frame])
                    sent += FRAME_S
    return sent


@pytest.mark.slow
@pytest.mark.redeploys
def test_sessions_of_every_protocol_are_closed_and_charged_once_when_the_ingress_is_redeployed(
    service: Service, call_samples: np.ndarray
) -> None:
    keys = _new_keys(service)
    changed: dict[str, Any] = yaml.safe_load(yaml.safe_dump(service.process.config()))
    for deployment in changed["applications"][0]["deployments"]:
        if deployment["name"] == "Ingress":  # a new environment: new replicas; the LiveTranscriber stays
            deployment["graceful_shutdown_timeout_s"] = GRACE_S
            deployment["ray_actor_options"]["runtime_env"]["env_vars"]["STT_TEST_REDEPLOYED"] = "1"
    audio = call_samples[: 16_000 * 3]

    async def sessions() -> list[float]:
        base = service.base_url.replace("http", "ws")
        streams = [
            _stream_until_closed(base + path, scheme, keys[protocol], send, audio)
            for protocol, (path, scheme, send) in PROTOCOLS.items()
        ]
        return await asyncio.gather(*streams)

    redeploy = threading.Timer(5.0, _deploy, (service, changed))
    redeploy.start()
    started = time.monotonic()
    sent = asyncio.run(asyncio.wait_for(sessions(), timeout=180))
    redeploy.join()
    print(f"\nsessions ended {time.monotonic() - started:.1f} s after they started; seconds sent {sent}")
    deadline = time.monotonic() + 60
    while not all(_usage(service, key) for key in keys.values()) and time.monotonic() < deadline:
        time.sleep(1)
    charged = {protocol: _usage(service, key) for protocol, key in keys.items()}
    print({protocol: [row["seconds"] for row in rows] for protocol, rows in charged.items()})
    for protocol, rows in charged.items():
        assert len(rows) == 1, (protocol, rows)  # charged, once
        assert 0 < rows[0]["seconds"] <= sent[list(keys).index(protocol)] + FRAME_S, (protocol, rows)
    assert value(scrape(service.process.metrics_url(), set()), "ray_stt_live_sessions_open") == 0
