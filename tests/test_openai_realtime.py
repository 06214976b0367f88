"""OpenAI realtime transcription sessions without Ray: the session configuration both shapes update, the worker
events translated to OpenAI events (checked against the `openai` SDK's own types), the worker's server-VAD
and commit turns on real speech, and `/v1/realtime` in-process over a fake LiveTranscriber."""

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeServerEvent, RealtimeTranscriptionSessionCreateResponse
from pydantic import TypeAdapter, ValidationError
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from deployments.billing.ledger import UsageLedger
from deployments.config import LiveConfig
from deployments.live._session import LiveSession
from deployments.live.events import (
    LiveEvent,
    SessionSettings,
    SpeechEnded,
    SpeechStarted,
    TranscriptEvent,
    TurnEnded,
)
from deployments.types import ChunkOptions, ChunkTranscript, Word
from serve_app.common.auth import ApiKey
from serve_app.realtime._config import TranscriptionConfig
from serve_app.realtime._events import ItemEvents
from tests import inprocess
from tests.inprocess import BROKE_KEY, KEY, live_app
from tests.test_live_session import FakeModels, stream_audio

GA_EVENTS: TypeAdapter = TypeAdapter(RealtimeServerEvent)
BETA_EVENTS: TypeAdapter = TypeAdapter(BetaServerEvent)


# The configuration


def test_the_defaults_are_openais_pcm16_at_24_khz_with_server_vad() -> None:
    settings = TranscriptionConfig().settings()
    assert (settings.encoding, settings.sample_rate, settings.turn_detection) == ("pcm_s16le", 24000, "vad")
    assert (settings.vad_threshold, settings.silence_ms, settings.preroll_ms) == (0.5, 500, 300)


def test_a_beta_update_changes_only_the_fields_it_carries() -> None:
    vad = {"type": "server_vad", "threshold": 0.6, "silence_duration_ms": 700, "prefix_padding_ms": 200}
    config = TranscriptionConfig().updated(
        {"input_audio_format": "g711_ulaw", "turn_detection": vad, "input_audio_transcription": {"language": "de"}},
        beta=True,
    )
    settings = config.updated({"input_audio_transcription": {"prompt": "names"}}, beta=True).settings()
    assert (settings.encoding, settings.sample_rate, settings.language) == ("pcm_mulaw", 8000, "de")
    assert (settings.vad_threshold, settings.silence_ms, settings.preroll_ms) == (0.6, 700, 200)


def test_a_ga_update_reads_audio_input_and_null_turn_detection_means_the_client_commits() -> None:
    session = {"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcma"}, "turn_detection": None}}}
    settings = TranscriptionConfig().updated(session, beta=False).settings()
    assert (settings.encoding, settings.sample_rate, settings.turn_detection) == ("pcm_alaw", 8000, "manual")
    semantic = {"type": "transcription", "audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}
    assert TranscriptionConfig().updated(semantic, beta=False).settings().turn_detection == "smart"


@pytest.mark.parametrize(
    ("session", "beta"),
    [
        ({"input_audio_format": "mp3"}, True),
        ({"input_audio_transcription": {"language": "klingon"}}, True),
        ({"turn_detection": {"type": "server_vad", "threshold": 2}}, True),
        ({"type": "transcription", "audio": {"input": {"format": {"type": "audio/mp3"}}}}, False),
        ({"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}, False),
        ({"type": "realtime"}, False),
    ],
)
def test_a_bad_update_is_refused(session: dict, beta: bool) -> None:
    with pytest.raises((ValidationError, ValueError)):
        TranscriptionConfig().updated(session, beta=beta)


def test_the_session_as_shown_is_the_sdks_session_object() -> None:
    config = TranscriptionConfig().updated({"input_audio_format": "g711_alaw", "turn_detection": None}, beta=True)
    shown = RealtimeTranscriptionSessionCreateResponse.model_validate(config.ga_session("sess_1"))
    assert shown.audio is not None and shown.audio.input is not None and shown.audio.input.format is not None
    assert shown.audio.input.format.type == "audio/pcma" and shown.audio.input.turn_detection is None
    assert config.beta_session("sess_1")["input_audio_format"] == "g711_alaw"


# The worker's events as OpenAI events


def words(text: str, turn: int | None) -> TranscriptEvent:
    return TranscriptEvent(text=text, words=[], turn=turn)


TURN: list[LiveEvent] = [
    SpeechStarted(turn=0, start=1000),
    words(" Hello", 0),
    words(" world.", 0),
    SpeechEnded(turn=0, end=2400),
    TurnEnded(turn=0, start=1000, end=2400, confidence=None, text="Hello world.", words=[]),
    SpeechStarted(turn=1, start=4000),
    words(" Again.", 1),
]


@pytest.mark.parametrize("beta", [False, True])
def test_a_turn_is_an_item_with_deltas_then_its_commit_and_completed_transcript(beta: bool) -> None:
    items = ItemEvents(beta=beta, vad_events=True, prefix_padding_ms=300)
    sent = [payload for event in TURN for payload in items.translate(event)]
    for payload in sent:
        (BETA_EVENTS if beta else GA_EVENTS).validate_python(payload)
    item = "conversation.item.created" if beta else "conversation.item.added"
    assert [payload["type"] for payload in sent] == [
        "input_audio_buffer.speech_started",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.delta",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        item,
        "conversation.item.input_audio_transcription.completed",
        *([] if beta else ["conversation.item.done"]),
        "input_audio_buffer.speech_started",
        "conversation.item.input_audio_transcription.delta",
    ]
    first, second = sent[0]["item_id"], sent[-1]["item_id"]
    assert first != second and all(p.get("item_id", first) == first for p in sent[:-2] if "item_id" in p)
    assert sent[0]["audio_start_ms"] == 700  # prefix padding included, as OpenAI reports it
    assert "".join(p["delta"] for p in sent[1:3]) == "Hello world."
    completed = next(p for p in sent if p["type"].endswith(".completed"))
    assert completed["transcript"] == "Hello world." and completed["usage"] == {"type": "duration", "seconds": 1.4}
    assert sent[-2]["item_id"] == second and len({p["event_id"] for p in sent}) == len(sent)


def test_without_vad_no_speech_events_are_sent() -> None:
    items = ItemEvents(beta=False, vad_events=False, prefix_padding_ms=300)
    kinds = [payload["type"] for event in TURN for payload in items.translate(event)]
    assert not any(kind.startswith("input_audio_buffer.speech") for kind in kinds)


# The worker's turns for OpenAI sessions, with the real Silero VAD on real speech


def test_server_vads_threshold_and_silence_set_the_speech_detector() -> None:
    from deployments.live._speech_activity import SpeechDetector

    default = SpeechDetector()
    assert (default.start_threshold, default.stop_threshold, default.stop_windows) == (0.5, 0.35, 7)
    assert SpeechDetector(0.5, SessionSettings().silence_ms).stop_windows == 7  # the nexara protocol's ~220 ms
    chosen = SpeechDetector(0.6, 500)
    assert chosen.stop_threshold == pytest.approx(0.45) and chosen.stop_windows == 16


class HallucinatingModels(FakeModels):
    """Whisper as it is on silence: a streaming reading of audio without words writes " Thank you." into it."""

    async def transcribe(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        transcript = await super().transcribe(samples, options)
        if transcript.words or options.beam_size is None:
            return transcript
        thanks = [Word(word=" Thank", start=0.0, end=0.2), Word(word=" you.", start=0.2, end=0.4)]
        return ChunkTranscript(language="en", segments=[], words=thanks)


async def run_session(
    settings: SessionSettings,
    commit_after_s: float | None = None,
    models_class: type[FakeModels] = FakeModels,
    input_s: float | None = None,
) -> list[Any]:
    audio, script = stream_audio()
    audio = audio[: int(input_s * 16000)] if input_s is not None else audio
    models = models_class(script, 0.9)
    session = LiveSession(settings, LiveConfig(), models.live())
    models.watch(session)
    pcm = (audio * 32767).astype("<i2").tobytes()
    for offset in range(0, len(pcm), 6400):
        assert session.push(pcm[offset : offset + 6400]) is None
        if commit_after_s is not None and offset == int(commit_after_s * 16000) * 2 // 6400 * 6400:
            session.mark("commit")
        await asyncio.sleep(0)
    session.end_input()
    events = [event async for event in session.events()]
    await session.close()
    return events


def test_server_vad_ends_a_turn_at_every_pause_and_every_word_is_in_one() -> None:
    events = asyncio.run(run_session(SessionSettings(turn_detection="vad", silence_ms=500)))
    ends = [event for event in events if isinstance(event, TurnEnded)]
    transcripts = [event for event in events if isinstance(event, TranscriptEvent)]
    assert len(ends) == 2 and all(event.confidence is None for event in ends)
    assert [w.text for end in ends for w in end.words] == [w.text for t in transcripts for w in t.words]
    for end in ends:  # the turn's words come before its end
        assert all(events.index(t) < events.index(end) for t in transcripts if t.turn == end.turn)


def test_a_commit_makes_everything_heard_final_and_ends_the_turn_there() -> None:
    events = asyncio.run(run_session(SessionSettings(turn_detection="manual"), commit_after_s=2.0))
    ends = [event for event in events if isinstance(event, TurnEnded)]
    assert [end.turn for end in ends] == [0, 1]  # the commit's, then the end of input's
    assert ends[0].end <= 2200 and ends[0].words and all(w.end <= 2400 for w in ends[0].words)
    assert not any(isinstance(event, SpeechEnded) and event.turn == 0 and event.end > 2200 for event in events)


@pytest.mark.parametrize(("commit_s", "input_s"), [(3.7, None), (13.3, 13.5)])
def test_a_commit_in_the_silence_after_speech_opens_no_turn_of_silence(commit_s: float, input_s: float | None) -> None:
    """jfk committed 0.5 s after its last word, under server VAD's 500 ms: the speech had ended but the VAD had
    not said so yet. Nothing voiced follows the commit, so no turn opens and no reading writes Whisper's
    "Thank you." into the silence, whether more speech follows or the input ends; every speech stops after it
    starts."""
    settings = SessionSettings(turn_detection="vad", silence_ms=500)
    events = asyncio.run(run_session(settings, commit_s, HallucinatingModels, input_s))
    assert not [event.text for event in events if isinstance(event, TranscriptEvent) and "Thank" in event.text]
    ends = [event for event in events if isinstance(event, TurnEnded)]
    assert len(ends) == 2 and all(end.words for end in ends)  # the commit's and the second stretch's
    starts = {event.turn: event.start for event in events if isinstance(event, SpeechStarted)}
    assert all(event.end >= starts[event.turn] for event in events if isinstance(event, SpeechEnded))


# /v1/realtime in-process

SESSION_ID = "live-1"
TINY_KEY = "realtime-tiny"  # 0.001 at 0.6 a minute: 0.1 s of audio, 4800 bytes of 24 kHz pcm16


class FakeLive(inprocess.FakeLive):
    """A session that says " hello" and ends the turn at each commit, and " bye" when input ends (24 kHz pcm16)."""

    session_id, bytes_per_ms, text = SESSION_ID, 48, "hello bye"

    def committed(self) -> list[LiveEvent]:
        turn = self.commits - 1
        return [TranscriptEvent(text=" hello", words=[], turn=turn),
                TurnEnded(turn=turn, start=0, end=1000, confidence=None, text="hello", words=[])]  # fmt: skip

    def ended(self) -> list[LiveEvent]:
        return [TranscriptEvent(text=" bye", words=[], turn=self.commits),
                TurnEnded(turn=self.commits, start=1000, end=2000, confidence=None, text="bye", words=[])]  # fmt: skip


@pytest.fixture
def realtime(tmp_path: Path) -> Iterator[tuple[TestClient, FakeLive, UsageLedger]]:
    fake = FakeLive()
    with live_app(tmp_path, fake, [ApiKey(key=KEY), ApiKey(key=BROKE_KEY, balance_seconds=0)]) as (client, ledger):
        yield client, fake, ledger


def append(seconds: float) -> str:
    audio = base64.b64encode(b"\0" * int(seconds * 48000)).decode()
    return json.dumps({"type": "input_audio_buffer.append", "audio": audio})


def exchange(
    client: TestClient, events: list[str], expect: int, key: str = KEY, headers: dict | None = None
) -> list[dict]:
    """The server's first event and the `expect` events after the client's, then the client leaves."""
    headers = {"Authorization": f"Bearer {key}", **(headers or {})}
    with client.websocket_connect("/v1/realtime?intent=transcription", headers=headers) as socket:
        received = [socket.receive_json()]
        for event in events:
            socket.send_text(event)
        received += [socket.receive_json() for _ in range(expect)]
    return received


def test_audio_then_a_commit_is_one_item_transcribed_and_the_audio_is_charged(realtime) -> None:
    client, fake, ledger = realtime
    update = {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": {"turn_detection": None}}},
    }
    received = exchange(
        client, [json.dumps(update), append(1.0), append(0.5), '{"type":"input_audio_buffer.commit"}'], 6
    )
    kinds = [event["type"] for event in received]
    assert kinds == [
        "session.created",
        "session.updated",
        "conversation.item.input_audio_transcription.delta",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.done",
    ]
    assert received[1]["session"]["audio"]["input"]["turn_detection"] is None
    assert received[5]["transcript"] == "hello" and received[2]["item_id"] == received[5]["item_id"]
    assert fake.settings[0].turn_detection == "manual" and len(fake.pushed) == 72000
    deadline = time.monotonic() + 5
    while not fake.closed and time.monotonic() < deadline:  # the server ends the session once the client left
        time.sleep(0.01)
    assert fake.closed == [SESSION_ID]
    [row] = ledger.usage_page(ApiKey(key=KEY).owner, None, 10)
    assert (row.task, row.bytes, row.audio_seconds) == ("realtime", 72000, 1.5)


def test_the_beta_client_gets_the_beta_events(realtime) -> None:
    client, _, _ = realtime
    update = {"type": "transcription_session.update", "session": {"input_audio_format": "g711_ulaw"}}
    received = exchange(client, [json.dumps(update)], 1, headers={"OpenAI-Beta": "realtime=v1"})
    assert [event["type"] for event in received] == ["transcription_session.created", "transcription_session.updated"]
    assert received[1]["session"]["input_audio_format"] == "g711_ulaw"


@pytest.mark.parametrize(
    ("event", "code", "param"),
    [
        ({"type": "transcription_session.update", "session": {"input_audio_format": "mp3"}}, "invalid_value", "format"),
        ({"type": "input_audio_buffer.append", "audio": "not base64!"}, "invalid_value", "audio"),
        ({"type": "input_audio_buffer.commit"}, "input_audio_buffer_commit_empty", None),
        ({"type": "response.create"}, "invalid_event", "type"),
    ],
)
def test_a_bad_event_is_an_error_event_and_the_session_goes_on(realtime, event: dict, code: str, param: str) -> None:
    client, _, _ = realtime
    received = exchange(client, [json.dumps({**event, "event_id": "mine"}), '{"type":"input_audio_buffer.clear"}'], 2)
    error = received[1]["error"]
    assert received[1]["type"] == "error" and (error["code"], error["param"], error["event_id"]) == (
        code,
        param,
        "mine",
    )
    assert received[2]["type"] == "input_audio_buffer.cleared"


def test_an_oversized_append_is_an_error_event(realtime) -> None:
    client, fake, _ = realtime
    received = exchange(client, [append(2**20 / 48000 + 0.1), '{"type":"input_audio_buffer.clear"}'], 2)
    assert received[1]["error"]["code"] == "message_too_large" and not fake.pushed
    assert received[2]["type"] == "input_audio_buffer.cleared"


def test_the_format_cannot_change_once_audio_flows(realtime) -> None:
    client, _, _ = realtime
    update = {"type": "transcription_session.update", "session": {"input_audio_format": "g711_alaw"}}
    received = exchange(client, [append(0.2), json.dumps(update)], 1)
    assert received[1]["error"]["code"] == "session_locked"


@pytest.mark.parametrize(
    ("key", "code", "close"), [("wrong", "invalid_api_key", 4001), (BROKE_KEY, "insufficient_balance", 4402)]
)
def test_a_refused_key_is_an_error_event_then_a_close(realtime, key: str, code: str, close: int) -> None:
    client, _, _ = realtime
    with client.websocket_connect("/v1/realtime", headers={"Authorization": f"Bearer {key}"}) as socket:
        error = socket.receive_json()
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()
    assert (error["type"], error["error"]["code"], closed.value.code) == ("error", code, close)


def test_a_browser_offers_its_key_as_a_subprotocol(realtime) -> None:
    client, _, _ = realtime
    protocols = ["realtime", f"openai-insecure-api-key.{KEY}", "openai-beta.realtime-v1"]
    with client.websocket_connect("/v1/realtime", subprotocols=protocols) as socket:
        assert socket.accepted_subprotocol == "realtime"
        assert socket.receive_json()["type"] == "transcription_session.created"


def test_a_silent_client_gets_what_was_heard_then_idle_timeout(realtime) -> None:
    client, _, _ = realtime
    client.app.state.services.config.live.idle_timeout_s = 0.5
    with client.websocket_connect("/v1/realtime", headers={"Authorization": f"Bearer {KEY}"}) as socket:
        socket.receive_json()
        socket.send_text(append(0.5))
        received = []
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                received.append(socket.receive_json())
    kinds = [event["type"] for event in received]
    assert kinds[0] == "conversation.item.input_audio_transcription.delta" and received[3]["transcript"] == "bye"
    assert received[-1]["error"]["code"] == "idle_timeout" and closed.value.code == 4008
