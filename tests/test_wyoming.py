"""`stt wyoming`'s parts without the service: audio chunks of any format joined as one 16 kHz mono WAV, and a
connection's events answered over fakes of the service's REST API and of its realtime WebSocket (a local
`websockets` server speaking its events; tests/test_wyoming_service.py: the real service)."""

import asyncio
import base64
import io
import json
import wave
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_read_event

from stt_cli.wyoming.handler import Settings, SttEventHandler, Transport
from stt_cli.wyoming.server import program_info
from stt_cli.wyoming.service import Service
from stt_cli.wyoming.utterance import Utterance


def test_chunks_of_other_formats_become_16_khz_mono_16_bit() -> None:
    utterance = Utterance(max_seconds=5)
    utterance.add(AudioChunk(rate=8_000, width=2, channels=2, audio=b"\x10\x00\x20\x00" * 8_000))  # 1 s stereo
    utterance.add(AudioChunk(rate=16_000, width=2, channels=1, audio=b"\x00\x00" * 16_000))  # 1 s
    with wave.open(io.BytesIO(utterance.wav())) as framed:
        assert (framed.getframerate(), framed.getnchannels(), framed.getsampwidth()) == (16_000, 1, 2)
        assert abs(framed.getnframes() - 32_000) <= 2
    assert abs(utterance.seconds - 2) < 0.01


class FakeService(Service):
    def __init__(self, base_url: str = "http://service.test") -> None:
        super().__init__(base_url, "key", timeout_s=10)
        self.forms: list[dict[str, str]] = []

    async def transcribe(self, wav: bytes, form: dict[str, str]) -> AsyncIterator[str]:
        self.forms.append(form)
        for piece in ("And so", " my fellow", " Americans."):
            yield piece


async def converse(
    events: list[Event],
    streaming: bool = True,
    max_seconds: float = 60,
    transport: Transport = "rest",
    base_url: str = "http://service.test",
) -> tuple[list[Event], FakeService]:
    service = FakeService(base_url)
    settings = Settings(service, program_info(base_url, ["whisper-1"], ["en"], streaming),
                        ("whisper-1",), streaming, max_seconds, transport)  # fmt: skip
    reader, sent = asyncio.StreamReader(), asyncio.StreamReader()

    class Writer:  # an asyncio.StreamWriter's part the handler uses
        def write(self, data: bytes) -> None:
            sent.feed_data(data)

        def writelines(self, lines: list[bytes]) -> None:
            for line in lines:
                sent.feed_data(line)

        async def drain(self) -> None:
            return None

        def close(self) -> None:
            sent.feed_eof()

    handler = SttEventHandler(settings, reader, Writer())  # type: ignore[arg-type]
    for event in events:
        await handler.handle_event(event)
    handler.writer.close()
    answers = []
    while (answer := await async_read_event(sent)) is not None:
        answers.append(answer)
    return answers, service


def audio(seconds: float) -> list[Event]:
    chunk = AudioChunk(16_000, 2, 1, b"\x01\x00" * int(16_000 * seconds)).event()
    return [AudioStart(16_000, 2, 1).event(), chunk, AudioStop().event()]


def test_an_utterance_is_streamed_then_transcribed_with_its_language_and_bias() -> None:
    request = Transcribe(language="en-US", transcript_names=["Ada"], transcript_terms=["kitchen light"]).event()
    answers, service = asyncio.run(converse([request, *audio(1)]))
    assert [a.type for a in answers] == ["transcript-start", *["transcript-chunk"] * 3, "transcript-stop",
                                         "transcript"]  # fmt: skip
    assert answers[-1].data == {"text": "And so my fellow Americans.", "language": "en-US"}
    assert service.forms == [{"model": "whisper-1", "language": "en", "prompt": "Ada, kitchen light"}]


def test_refusals_are_error_events() -> None:
    answers, _ = asyncio.run(converse([Transcribe(name="other").event(), *audio(1)], streaming=False))
    assert [a.type for a in answers] == ["error"] and "other" in answers[0].data["text"]
    answers, _ = asyncio.run(converse(audio(2), max_seconds=1))
    assert [a.type for a in answers] == ["error"] and "longer than 1 s" in answers[0].data["text"]
    answers, _ = asyncio.run(converse([AudioStart(16_000, 2, 1).event(), AudioStop().event()]))
    assert [a.type for a in answers] == ["error"]


class FakeRealtime:
    """The realtime endpoint's part `stt wyoming` meets: a delta per append, and at the commit the last delta,
    `committed` and `completed`; a language it does not know is an `error` event, as the service's."""

    def __init__(self) -> None:
        self.sessions: list[list[dict[str, Any]]] = []
        self.headers: list[str | None] = []

    async def __call__(self, websocket: ServerConnection) -> None:
        received: list[dict[str, Any]] = []
        self.sessions.append(received)
        self.headers.append(websocket.request.headers.get("Authorization") if websocket.request else None)
        await websocket.send(json.dumps({"type": "session.created", "session": {}}))
        deltas = iter(["And so", " my fellow"])
        async for message in websocket:
            event = json.loads(message)
            received.append(event)
            if event["type"] == "session.update":
                if event["session"]["audio"]["input"]["transcription"].get("language") == "xx":
                    error = {"type": "invalid_request_error", "code": "invalid_value", "message": "unsupported xx"}
                    await websocket.send(json.dumps({"type": "error", "error": error}))
                else:
                    await websocket.send(json.dumps({"type": "session.updated", "session": event["session"]}))
            elif event["type"] == "input_audio_buffer.append" and (delta := next(deltas, None)) is not None:
                await websocket.send(json.dumps({"type": DELTA, "item_id": "item_1", "delta": delta}))
            elif event["type"] == "input_audio_buffer.commit":
                for answer in (
                    {"type": DELTA, "item_id": "item_1", "delta": " Americans."},
                    {"type": "input_audio_buffer.committed", "item_id": "item_1"},
                    {"type": COMPLETED, "item_id": "item_1", "transcript": "And so my fellow Americans."},
                ):
                    await websocket.send(json.dumps(answer))


DELTA = "conversation.item.input_audio_transcription.delta"
COMPLETED = "conversation.item.input_audio_transcription.completed"


def chunked(seconds: float, pieces: int) -> list[Event]:
    """`seconds` of 16 kHz audio in `pieces` chunks, as a satellite streams it."""
    samples = int(16_000 * seconds) // pieces
    chunks = [AudioChunk(16_000, 2, 1, b"\x01\x00" * samples).event() for _ in range(pieces)]
    return [AudioStart(16_000, 2, 1).event(), *chunks, AudioStop().event()]


async def converse_live(
    events: list[Event], streaming: bool = True, max_seconds: float = 60
) -> tuple[list[Event], FakeRealtime]:
    realtime = FakeRealtime()
    async with serve(realtime, "127.0.0.1", 0) as server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        answers, _ = await converse(events, streaming, max_seconds, transport="live", base_url=url)
    return answers, realtime


def test_live_streams_the_audio_as_pcm16_at_24_khz_and_answers_with_the_committed_transcript() -> None:
    request = Transcribe(language="en-US", transcript_names=["Ada"], transcript_terms=["kitchen light"]).event()
    answers, realtime = asyncio.run(converse_live([request, *chunked(1, 4)]))
    assert [a.type for a in answers] == ["transcript-start", *["transcript-chunk"] * 3, "transcript-stop",
                                         "transcript"]  # fmt: skip
    assert "".join(a.data["text"] for a in answers[1:4]) == "And so my fellow Americans."
    assert answers[-1].data == {"text": "And so my fellow Americans.", "language": "en-US"}
    [events] = realtime.sessions
    assert realtime.headers == ["Bearer key"]
    update, *appends, commit = events
    audio_input = update["session"]["audio"]["input"]
    assert update["type"] == "session.update" and update["session"]["type"] == "transcription"
    assert audio_input["format"] == {"type": "audio/pcm", "rate": 24_000} and audio_input["turn_detection"] is None
    assert audio_input["transcription"] == {"language": "en", "prompt": "Ada, kitchen light"}
    assert {e["type"] for e in appends} == {"input_audio_buffer.append"} and len(appends) == 4
    sent = b"".join(base64.b64decode(e["audio"]) for e in appends)
    assert abs(len(sent) - 48_000) <= 8  # 1 s of 24 kHz 16-bit mono
    assert commit == {"type": "input_audio_buffer.commit"}


def test_live_without_streaming_sends_only_the_transcript() -> None:
    answers, realtime = asyncio.run(converse_live([Transcribe().event(), *chunked(0.5, 2)], streaming=False))
    assert [a.type for a in answers] == ["transcript"]
    assert "language" not in realtime.sessions[0][0]["session"]["audio"]["input"]["transcription"]


def test_live_errors_are_error_events_and_the_connection_serves_again() -> None:
    refused, good = Transcribe(language="xx").event(), Transcribe(language="en").event()
    answers, realtime = asyncio.run(converse_live([refused, *chunked(0.5, 2), good, *chunked(0.5, 2)]))
    assert answers[0].type == "error" and "unsupported xx" in answers[0].data["text"]
    assert [a.type for a in answers][-1] == "transcript" and len(realtime.sessions) == 2
    answers, _ = asyncio.run(
        converse([Transcribe().event(), *audio(1)], transport="live", base_url="http://127.0.0.1:9")
    )
    assert [a.type for a in answers] == ["error"] and answers[0].data["code"] == "failed"
    answers, realtime = asyncio.run(converse_live([Transcribe(name="other").event(), *audio(1)]))
    assert [a.type for a in answers] == ["error"] and "other" in answers[0].data["text"] and not realtime.sessions
    answers, realtime = asyncio.run(converse_live(chunked(2, 4), max_seconds=1))
    assert [a.type for a in answers] == ["error"] and "longer than 1 s" in answers[0].data["text"]
