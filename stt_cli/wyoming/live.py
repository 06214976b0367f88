"""One utterance as a session of the service's OpenAI realtime transcription API (`/v1/realtime`): opened when
Home Assistant announces the utterance, each chunk converted to pcm16 at 24 kHz and appended as it arrives (the
service transcribes while the user speaks), committed at `audio-stop`. The commit's `completed` transcript is
the utterance's text; its `delta`s go to `on_piece` as they come, usually before `audio-stop`.

The client commits (`turn_detection: null`): Home Assistant's own voice activity detection ends the
utterance, and a commit ends exactly one item, so the first `completed` after it is the whole answer."""

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from wyoming.audio import AudioChunk, AudioChunkConverter

from stt_cli.wyoming.utterance import UtteranceTooLongError

RATE, WIDTH, CHANNELS = 24_000, 2, 1
"""What the session's `audio/pcm` format is: OpenAI's pcm16, 24 kHz mono."""
LARGEST_APPEND = 48_000
"""Bytes of audio per `input_audio_buffer.append` at most (1 s): a large chunk goes in several."""


class LiveFailedError(RuntimeError):
    """The session failed: refused (an `error` event's message), unreachable, or closed before its transcript."""


def realtime_url(base_url: str) -> str:
    return base_url.replace("http", "ws", 1).rstrip("/") + "/v1/realtime?intent=transcription"


def session_update(language: str | None, prompt: str | None) -> dict[str, Any]:
    transcription = {key: value for key, value in (("language", language), ("prompt", prompt)) if value}
    audio_input = {"format": {"type": "audio/pcm", "rate": RATE}, "transcription": transcription,
                   "turn_detection": None}  # fmt: skip
    return {"type": "session.update", "session": {"type": "transcription", "audio": {"input": audio_input}}}


class LiveTranscription:
    """The session runs in a task from construction: `add` never waits for the network."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        session: dict[str, Any],
        max_seconds: float,
        on_piece: Callable[[str], Awaitable[None]],
        timeout_s: float = 120,
    ) -> None:
        self.max_bytes = int(max_seconds * RATE) * WIDTH * CHANNELS
        self.max_seconds, self.on_piece, self.timeout_s = max_seconds, on_piece, timeout_s
        self.converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self.sent = 0
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox.put_nowait(session)
        self.committed = False
        self.transcript: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run(realtime_url(base_url), api_key))

    @property
    def seconds(self) -> float:
        return self.sent / (RATE * WIDTH * CHANNELS)

    def add(self, chunk: AudioChunk) -> None:
        audio = self.converter.convert(chunk).audio
        if self.sent + len(audio) > self.max_bytes:
            raise UtteranceTooLongError(f"the utterance is longer than {self.max_seconds:g} s")
        self.sent += len(audio)
        for at in range(0, len(audio), LARGEST_APPEND):
            piece = base64.b64encode(audio[at : at + LARGEST_APPEND]).decode()
            self.outbox.put_nowait({"type": "input_audio_buffer.append", "audio": piece})

    async def finish(self) -> str:
        """Commit what was sent; the transcript of the committed audio (raises LiveFailedError)."""
        self.outbox.put_nowait({"type": "input_audio_buffer.commit"})
        try:
            return await asyncio.wait_for(asyncio.shield(self.transcript), self.timeout_s)
        except TimeoutError:
            raise LiveFailedError(f"no transcript within {self.timeout_s:g} s of audio-stop") from None
        finally:
            await self.close()

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        if not self.transcript.done():
            self.transcript.cancel()
        elif not self.transcript.cancelled():
            self.transcript.exception()  # a failure nobody waited for is not logged as never retrieved

    async def _run(self, url: str, api_key: str) -> None:
        from websockets import WebSocketException
        from websockets.asyncio.client import connect

        try:
            async with connect(url, additional_headers={"Authorization": f"Bearer {api_key}"},
                               open_timeout=self.timeout_s) as websocket:  # fmt: skip
                sender = asyncio.create_task(self._send(websocket))
                try:
                    async for message in websocket:
                        if await self._received(json.loads(message)):
                            return
                finally:
                    sender.cancel()
            self._fail("the service closed the session before the transcript")
        except (OSError, TimeoutError, WebSocketException, ValueError, LiveFailedError) as error:
            self._fail(str(error) or type(error).__name__)

    async def _send(self, websocket: Any) -> None:
        while True:
            event = await self.outbox.get()
            await websocket.send(json.dumps(event))
            if event["type"] == "input_audio_buffer.commit":
                self.committed = True

    async def _received(self, event: dict[str, Any]) -> bool:
        """One server event; True once the committed audio's transcript is in."""
        match event.get("type"):
            case "error":
                error = event.get("error") or {}
                raise LiveFailedError(str(error.get("message") or error.get("code") or event))
            case "conversation.item.input_audio_transcription.delta":
                if event.get("delta"):
                    await self.on_piece(str(event["delta"]))
            case "conversation.item.input_audio_transcription.completed" if self.committed:
                if not self.transcript.done():
                    self.transcript.set_result(str(event.get("transcript") or "").strip())
                return True
        return False

    def _fail(self, message: str) -> None:
        if not self.transcript.done():
            self.transcript.set_exception(LiveFailedError(message))
