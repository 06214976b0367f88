"""The live WebSocket's edge in-process (`create_app` with a fake LiveTranscriber, no Ray, no models): the
refusals before the upgrade, the frame rules after it, relaying events, and the session's charge."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from deployments.billing.ledger import UsageLedger
from deployments.live.events import LiveEvent, TranscriptEvent
from serve_app.common.auth import ApiKey
from tests import inprocess
from tests.inprocess import BROKE_KEY, KEY, live_app

TINY_KEY = "live-tiny"  # 0.001 at 0.6 a minute: 0.1 s of audio, 3200 bytes of 16 kHz pcm_s16le
SESSION_ID = "session-1"


class FakeLive(inprocess.FakeLive):
    """One session that hears what is pushed and says " hello" when input ends."""

    session_id, text = SESSION_ID, "hello"

    def ended(self) -> list[LiveEvent]:
        return [TranscriptEvent(text=" hello", words=[])]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[TestClient, FakeLive, UsageLedger]]:
    fake = FakeLive()
    keys = [
        ApiKey(key=KEY),
        ApiKey(key=BROKE_KEY, balance_seconds=0),
        ApiKey(key=TINY_KEY, balance=0.001, rate_per_min=0.6),
    ]
    with live_app(tmp_path, fake, keys) as (client, ledger):
        yield client, fake, ledger


def session(client: TestClient, frames: list[bytes | str], key: str = KEY, query: str = "") -> tuple[list, int]:
    """The JSON frames the server sent for these client frames, and its close code."""
    received = []
    with client.websocket_connect("/v1/transcribe" + query, headers={"Authorization": f"Bearer {key}"}) as socket:
        received.append(socket.receive_json())
        for frame in frames:
            socket.send_bytes(frame) if isinstance(frame, bytes) else socket.send_text(frame)
        try:
            while True:
                received.append(socket.receive_json())
        except WebSocketDisconnect as closed:
            return received, closed.code
    raise AssertionError("the server did not close the session")


def test_a_session_relays_events_and_is_charged_once_for_the_audio_received(live) -> None:
    client, fake, ledger = live
    received, code = session(client, [b"\0" * 32000, b"\0" * 16000, '{"type": "keepalive"}', b""])
    assert code == 1000
    assert [event["type"] for event in received] == ["session.created", "transcript", "session.ended"]
    assert received[0]["session_id"] == SESSION_ID and received[0]["model"] == "whisper-1"
    assert bytes(fake.pushed) == b"\0" * 48000 and fake.closed == [SESSION_ID]
    [row] = ledger.usage_page(ApiKey(key=KEY).owner, None, 10)
    assert (row.charge_id, row.task, row.bytes, row.audio_seconds) == (SESSION_ID, "realtime", 48000, 1.5)


def test_input_stops_where_the_money_runs_out_and_the_session_ends_4402(live) -> None:
    client, fake, ledger = live
    received, code = session(client, [b"\0" * 2000, b"\0" * 2000, b"\0" * 2000], key=TINY_KEY)
    assert code == 4402 and received[-1]["code"] == "insufficient_balance"
    assert len(fake.pushed) == 3200
    assert ledger.usage_page(ApiKey(key=TINY_KEY).owner, None, 10)[0].audio_seconds == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("frame", "reason", "code"),
    [('{"type": "hello"}', "invalid_message", 4004), (b"\0" * (2**20 + 1), "invalid_audio", 4002)],
)
def test_a_broken_rule_is_an_error_frame_then_its_close_code(live, frame: bytes | str, reason: str, code: int) -> None:
    client, _, _ = live
    received, closed = session(client, [frame])
    assert (received[-1]["type"], received[-1]["code"], closed) == ("error", reason, code)


def test_a_bad_query_is_invalid_config_after_the_upgrade(live) -> None:
    client, _, _ = live
    received, code = session(client, [], query="?sample_rate=123")
    assert (received[0]["code"], code) == ("invalid_config", 4000)


@pytest.mark.parametrize(("key", "status"), [("wrong", 401), (BROKE_KEY, 402)])
def test_refusals_before_the_upgrade_are_http_answers(live, key: str, status: int) -> None:
    client, _, _ = live
    with pytest.raises(WebSocketDenialResponse) as refused:
        session(client, [], key=key)
    assert refused.value.status_code == status and "detail" in refused.value.json()


@pytest.mark.parametrize(
    ("protocols", "chosen"),
    [(["bearer", KEY], "bearer"), (["realtime", f"openai-insecure-api-key.{KEY}"], "realtime")],
)
def test_a_browsers_key_subprotocol_is_answered_with_one_it_offered(live, protocols: list[str], chosen: str) -> None:
    client, _, _ = live
    with client.websocket_connect("/v1/transcribe", subprotocols=protocols) as socket:
        assert socket.accepted_subprotocol == chosen
        assert socket.receive_json()["type"] == "session.created"
        socket.send_bytes(b"")  # end of input: the session ends on its own
        with pytest.raises(WebSocketDisconnect):
            while True:
                socket.receive_json()
