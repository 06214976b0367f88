"""One OpenAI realtime transcription session's WebSocket: JSON client events in, OpenAI server events out.

A protocol translator around the live session runner (`serve_app.sessions.runner`), not another engine: the
session's audio goes to the same LiveTranscriber (paid for by the byte and forwarded in order; the session
closed and charged once at its end, shielded), and its events come back through the same relay, written as
OpenAI events (`_events.ItemEvents`).

The LiveTranscriber's session opens at the first `input_audio_buffer.append` (or `commit`), with the
configuration the client's `transcription_session.update` / `session.update` left by then: format and turn
detection cannot change once audio flows (an `error` event says so; the session goes on). Most errors are
OpenAI's recoverable kind: an `error` event naming the client event, and the session goes on. Those that end
it (the balance spent, the server full, idle too long, a failure) are an `error` event and the close code the
nexara protocol uses for them. When the money runs out or the client falls silent (no event for the idle
timeout), input ends there and what was heard is transcribed and sent before that `error`.
"""

import asyncio
import base64
import binascii
import json
import uuid
from typing import Any

from fastapi import HTTPException, WebSocket
from pydantic import ValidationError

from deployments.billing.pricing import Funds
from deployments.live.events import BYTES_PER_SAMPLE, CLOSE_CODES, SessionFailed, SessionSettings
from deployments.redaction import RedactionOptions
from deployments.types import KnownVoice
from deployments.vocabulary import unknown_dictionary
from serve_app.common.auth import ApiKey
from serve_app.common.redaction import redaction_options
from serve_app.common.services import Services
from serve_app.common.voices import known_voices
from serve_app.realtime._config import TranscriptionConfig
from serve_app.realtime._events import ItemEvents, error_event, failure_event, server_event
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.runner import LiveSessionRunner
from serve_app.sessions.socket import ClientSocket

SHORTEST_COMMIT_MS = 100
"""OpenAI refuses to commit less audio than this (`input_audio_buffer_commit_empty`)."""
JSON_OVERHEAD = 4096
"""Room for the event's JSON around the base64 audio of the largest frame allowed."""


class RealtimeSocket(ClientSocket):
    """The session's socket, whose failures go out as OpenAI `error` events."""

    async def close_with(self, failure: SessionFailed) -> None:
        await self.send(failure_event(failure))
        await self.close(CLOSE_CODES[failure.code])


class RealtimeConnection:
    def __init__(self, websocket: WebSocket, services: Services, key: ApiKey, funds: Funds, beta: bool) -> None:
        self.websocket, self.services = websocket, services
        self.beta = beta  # the beta protocol's event names (`transcription_session.*`, `conversation.item.created`)
        self.socket = RealtimeSocket(websocket)
        self.limits = services.config.live
        self.config = TranscriptionConfig()
        self.id = f"sess_{uuid.uuid4().hex[:20]}"
        self.key = key
        self.session = LiveSessionRunner(websocket, services, key, funds, self.socket, self._model)
        self.voices: list[KnownVoice] = []  # the enrolled voices `transcription.voices` names
        self.redaction: RedactionOptions | None = None  # `transcription.redact`, read
        self.settings: SessionSettings | None = None  # once the LiveTranscriber's session is open
        self.frames: ClientFrames | None = None
        self.items: ItemEvents | None = None

    async def run(self) -> None:
        await self.socket.send(self._session_event("created"))
        await self.session.run(self._receive())

    @property
    def _model(self) -> str:
        return self.services.config.model_ids[0]

    async def _receive(self) -> SessionFailed | None:
        """Client events until the client is gone (None) or the session must end (the failure to send)."""
        idle_s = self.limits.idle_timeout_s
        largest = self.limits.max_frame_bytes * 4 // 3 + JSON_OVERHEAD
        while True:
            input_ended = self.frames is not None and self.frames.input_ended
            try:
                message = await asyncio.wait_for(self.websocket.receive(), timeout=None if input_ended else idle_s)
            except TimeoutError:
                idle = SessionFailed(code="idle_timeout", message=f"no client event for {idle_s:g} s")
                if self.frames is None:
                    return idle
                self.frames.failure_at_end = idle  # sent once what was heard is transcribed and sent
                if (failure := await self.frames.end_input()) is not None:
                    return failure
                continue
            if message["type"] == "websocket.disconnect":
                return None
            text = message.get("text")
            if text is None:
                await self._error("invalid_event", "send JSON text events: audio goes in input_audio_buffer.append")
            elif len(text) > largest:
                limit = self.limits.max_frame_bytes
                await self._error("message_too_large", f"one event may carry at most {limit} bytes of audio")
            elif (failure := await self._event(text)) is not None:
                return failure

    async def _event(self, text: str) -> SessionFailed | None:
        try:
            event = json.loads(text)
            kind, client_event_id = event.get("type"), event.get("event_id")
        except (ValueError, AttributeError):
            await self._error("invalid_json", "events must be JSON objects with a `type`")
            return None
        match kind:
            case "transcription_session.update":
                self.beta = True
                await self._update(event, client_event_id)
            case "session.update":
                await self._update(event, client_event_id)
            case "input_audio_buffer.append":
                return await self._append(event, client_event_id)
            case "input_audio_buffer.commit":
                return await self._commit(client_event_id)
            case "input_audio_buffer.clear":
                return await self._clear()
            case _:
                message = f"unsupported event type {str(kind)[:64]!r} in a transcription session"
                await self._error("invalid_event", message, param="type", event=client_event_id)
        return None

    async def _update(self, event: dict[str, Any], client_event_id: str | None) -> None:
        session = event.get("session")
        if not isinstance(session, dict):
            return await self._error(
                "invalid_value", "`session` must be an object", param="session", event=client_event_id
            )
        try:
            config = self.config.updated(session, self.beta)
        except ValidationError as error:
            problem = error.errors()[0]
            param = ".".join(map(str, problem["loc"])) or "session"
            return await self._error("invalid_value", f"{param}: {problem['msg']}", param=param, event=client_event_id)
        except ValueError as error:
            return await self._error("invalid_value", str(error), param="session", event=client_event_id)
        if (
            unknown := unknown_dictionary(config.transcription.dictionary, self.services.config.vocabulary)
        ) is not None:
            param = "transcription.dictionary"
            return await self._error("invalid_value", f"{param}: {unknown}", param=param, event=client_event_id)
        try:
            voices = await known_voices(self.services, self.key.owner, config.transcription.voices or [])
        except HTTPException as refusal:
            param = "transcription.voices"
            return await self._error("invalid_value", str(refusal.detail), param=param, event=client_event_id)
        asked = config.transcription
        try:
            redaction = redaction_options(asked.redact or [], asked.redact_mode, self.key.owner, asked.language)
        except HTTPException as refusal:
            param = "transcription.redact_mode" if "redact_mode" in str(refusal.detail) else "transcription.redact"
            return await self._error("invalid_value", str(refusal.detail), param=param, event=client_event_id)
        if self.settings is not None and (config.settings() != self.settings or redaction != self.redaction):
            message = (
                "the audio format, turn detection, language, vocabulary and redaction cannot change once audio has"
                " been sent"
            )
            return await self._error("session_locked", message, param="session", event=client_event_id)
        self.config, self.voices, self.redaction = config, voices, redaction
        await self.socket.send(self._session_event("updated"))

    async def _append(self, event: dict[str, Any], client_event_id: str | None) -> SessionFailed | None:
        try:
            audio = base64.b64decode(event.get("audio") or "", validate=True)
        except (binascii.Error, TypeError):
            await self._error("invalid_value", "audio must be base64", param="audio", event=client_event_id)
            return None
        if len(audio) > self.limits.max_frame_bytes:
            message = (
                f"one event may carry at most {self.limits.max_frame_bytes} bytes of audio; this one had {len(audio)}"
            )
            await self._error("message_too_large", message, param="audio", event=client_event_id)
            return None
        if not audio:
            return None
        if (failure := await self._open()) is not None:
            return failure
        assert self.frames is not None and self.items is not None and self.settings is not None
        self.items.uncommitted_ms += (
            len(audio) * 1000 // (BYTES_PER_SAMPLE[self.settings.encoding] * self.settings.sample_rate)
        )
        return await self.frames.audio(audio)

    async def _commit(self, client_event_id: str | None) -> SessionFailed | None:
        if self.items is None or self.items.uncommitted_ms < SHORTEST_COMMIT_MS:
            heard = 0 if self.items is None else self.items.uncommitted_ms
            message = (
                f"buffer too small: at least {SHORTEST_COMMIT_MS} ms of audio must be committed, it holds {heard} ms"
            )
            await self._error("input_audio_buffer_commit_empty", message, event=client_event_id)
            return None
        assert self.frames is not None and self.session.live_id is not None
        if (failure := await self.frames.pushed()) is not None:  # the audio before the commit goes first
            return failure
        self.items.uncommitted_ms = 0
        await self.frames.calls.commit()
        return None

    async def _clear(self) -> SessionFailed | None:
        if self.frames is not None and self.session.live_id is not None and self.items is not None:
            if (failure := await self.frames.pushed()) is not None:
                return failure
            self.items.uncommitted_ms = 0
            await self.frames.calls.clear()
        await self.socket.send(server_event("input_audio_buffer.cleared"))
        return None

    async def _open(self) -> SessionFailed | None:
        """The LiveTranscriber's session, at the first audio, with the configuration as it stands."""
        if self.frames is not None:
            return None
        settings = self.config.settings()
        vad_events = self.config.turn_detection is not None
        items = ItemEvents(self.beta, vad_events, self.config.prefix_padding_ms)
        opened = settings.model_copy(update={"voices": self.voices, "redaction": self.redaction})
        if (failure := await self.session.open(opened, lambda _: items.translate)) is not None:
            return failure
        self.settings, self.items, self.frames = settings, items, self.session.frames
        return None

    def _session_event(self, what: str) -> dict[str, Any]:
        if self.beta:
            return server_event(f"transcription_session.{what}", session=self.config.beta_session(self.id))
        return server_event(f"session.{what}", session=self.config.ga_session(self.id))

    async def _error(self, code: str, message: str, param: str | None = None, event: str | None = None) -> None:
        await self.socket.send(error_event(code, message, param=param, event=event))
