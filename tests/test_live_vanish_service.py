"""A live session whose client vanishes mid-utterance (its TCP connection dropped, no close frame), in each live
protocol, through the running service: the session is closed on the LiveTranscriber and charged exactly once
for the audio it received (one usage row), as every session is, however it ends (`serve_app.sessions.runner`:
closing and charging run shielded from the handler's cancellation, which is what a dropped connection brings)."""

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import numpy as np
import pytest
import soxr
import websockets

from devkit.prometheus import scrape, value
from tests.conftest import ADMIN_KEY, Service

pytestmark = pytest.mark.paced  # see tests/conftest.py: after the other service tests

FRAME_S = 0.1
SENT_S = 4.0
"""Audio sent before the client vanishes: the call's first words, mid-utterance."""
RATE_PER_MIN = 0.6

Sender = Callable[[Any, np.ndarray], Awaitable[None]]


def _pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


async def _nexara(ws: Any, audio: np.ndarray) -> None:
    for start in range(0, len(audio), int(16_000 * FRAME_S)):
        await ws.send(_pcm16(audio[start : start + int(16_000 * FRAME_S)]))
        await asyncio.sleep(FRAME_S / 2)


async def _openai(ws: Any, audio: np.ndarray) -> None:
    at_24k = soxr.resample(audio, 16_000, 24_000)  # OpenAI's pcm16 is 24 kHz
    for start in range(0, len(at_24k), int(24_000 * FRAME_S)):
        chunk = base64.b64encode(_pcm16(at_24k[start : start + int(24_000 * FRAME_S)])).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
        await asyncio.sleep(FRAME_S / 2)


async def _deepgram(ws: Any, audio: np.ndarray) -> None:
    for start in range(0, len(audio), int(16_000 * FRAME_S)):
        await ws.send(_pcm16(audio[start : start + int(16_000 * FRAME_S)]))
        await asyncio.sleep(FRAME_S / 2)


PROTOCOLS: dict[str, tuple[str, str, Sender]] = {
    "nexara": ("/v1/transcribe", "Bearer", _nexara),
    "openai-realtime": ("/v1/realtime?intent=transcription", "Bearer", _openai),
    "deepgram": ("/v1/listen?encoding=linear16&sample_rate=16000&model=nova-3", "Token", _deepgram),
}
"""Each live protocol's path, its key's scheme, and how it sends audio (nexara and OpenAI open with
`session.created`, left unread: a client streaming audio need not read its events)."""


def _new_keys(service: Service) -> dict[str, str]:
    """A new key for each protocol's client: its usage rows are its session's."""
    keys = {}
    with service.client(api_key=ADMIN_KEY, timeout=30) as admin:
        for protocol in PROTOCOLS:
            made = admin.post(
                "/v1/admin/keys", json={"name": "vanishing client", "balance": 5.0, "rate_per_min": RATE_PER_MIN}
            )
            assert made.status_code == 201, made.text
            keys[protocol] = str(made.json()["key"])
    time.sleep(1.5)  # another ingress replica re-reads the key store at most every second
    return keys


def _usage(service: Service, key: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{service.base_url}/v1/billing/usage", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return [item for item in answer.json()["items"] if item["task"] == "realtime"]


async def _vanish(url: str, scheme: str, key: str, send: Sender, audio: np.ndarray) -> None:
    async with websockets.connect(url, additional_headers={"Authorization": f"{scheme} {key}"}) as ws:
        await send(ws, audio)
        ws.transport.abort()  # the TCP connection dropped: no close frame


def test_clients_that_vanish_mid_utterance_are_closed_and_charged_once(
    service: Service, call_samples: np.ndarray
) -> None:
    """One client of each protocol at once, each with a key of its own (its usage rows are its session's)."""
    keys = _new_keys(service)
    audio = call_samples[: int(SENT_S * 16_000)]

    async def vanish_all() -> None:
        async def one(protocol: str) -> None:
            path, scheme, send = PROTOCOLS[protocol]
            with contextlib.suppress(websockets.ConnectionClosed):  # the library may notice its own abort on leaving
                await _vanish(service.base_url.replace("http", "ws") + path, scheme, keys[protocol], send, audio)

        await asyncio.gather(*(one(protocol) for protocol in PROTOCOLS))

    asyncio.run(vanish_all())
    deadline = time.monotonic() + 60
    while not all(_usage(service, key) for key in keys.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)  # a second charge, were there one, would be in by now
    for protocol, key in keys.items():
        rows = _usage(service, key)
        assert len(rows) == 1, (protocol, rows)  # charged exactly once
        assert rows[0]["seconds"] == pytest.approx(SENT_S, abs=FRAME_S), (protocol, rows)  # for what it sent
    deadline = time.monotonic() + 30
    while (open_sessions := value(scrape(service.process.metrics_url(), set()), "ray_stt_live_sessions_open")) > 0:
        assert time.monotonic() < deadline, f"{open_sessions:g} sessions still open on the LiveTranscriber"
        time.sleep(1)
