"""The LiveTranscriber's events as OpenAI realtime transcription events, one conversation item per turn.

A turn (`deployments/live/_turns.py`) is an item: its speech start and end are
`input_audio_buffer.speech_started` / `speech_stopped` (server VAD only, as OpenAI sends them), its final
words `conversation.item.input_audio_transcription.delta` as they are spoken, and its end (a pause, Smart
Turn's verdict or the client's commit) `input_audio_buffer.committed`, the item, and
`conversation.item.input_audio_transcription.completed` with the whole transcript. Deltas come before the
commit: the words are final as soon as they are sent, so a client sees them while the speaker still talks.
"""

import uuid
from typing import Any

from deployments.live.events import LiveEvent, SessionFailed, SpeechEnded, SpeechStarted, TranscriptEvent, TurnEnded

CLIENT_ERRORS = {"invalid_config", "unauthorized", "invalid_audio", "invalid_message", "insufficient_balance"}
"""Failures that are the client's doing (`invalid_request_error`); the rest are `server_error`."""
OPENAI_CODES = {"unauthorized": "invalid_api_key", "invalid_config": "invalid_value"}
"""The nexara failure codes OpenAI names otherwise; the others keep their nexara name."""


def event_id() -> str:
    return f"event_{uuid.uuid4().hex[:20]}"


def server_event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "event_id": event_id(), **fields}


def error_event(
    code: str, message: str, *, kind: str = "invalid_request_error", param: str | None = None, event: str | None = None
) -> dict[str, Any]:
    """OpenAI's `error` event; `event` is the id of the client event that caused it."""
    error = {"type": kind, "code": code, "message": message, "param": param, "event_id": event}
    return server_event("error", error=error)


def failure_event(failure: SessionFailed) -> dict[str, Any]:
    """A nexara session failure (the session ends after it) as an OpenAI `error` event."""
    kind = "invalid_request_error" if failure.code in CLIENT_ERRORS else "server_error"
    return error_event(OPENAI_CODES.get(failure.code, failure.code), failure.message, kind=kind)


class ItemEvents:
    """One session's turns as items: ids per turn, their text so far, and the events each worker event makes."""

    def __init__(self, beta: bool, vad_events: bool, prefix_padding_ms: int) -> None:
        self.beta = beta
        self.vad_events = vad_events  # speech_started/stopped: with server or semantic VAD only
        self.prefix_padding_ms = prefix_padding_ms
        self.items: dict[int, str] = {}
        self.texts: dict[int, list[str]] = {}
        self.previous_item_id: str | None = None
        self.uncommitted_ms = 0
        """Audio appended since the last commit (a commit of less than 100 ms is refused, as OpenAI does)."""

    def item_id(self, turn: int) -> str:
        if turn not in self.items:
            self.items[turn] = f"item_{uuid.uuid4().hex[:20]}"
        return self.items[turn]

    def translate(self, event: LiveEvent) -> list[dict[str, Any]]:
        match event:
            case SpeechStarted(turn=turn, start=start) if self.vad_events:
                audio_start_ms = max(0, start - self.prefix_padding_ms)
                item_id = self.item_id(turn)
                return [
                    server_event("input_audio_buffer.speech_started", audio_start_ms=audio_start_ms, item_id=item_id)
                ]
            case SpeechEnded(turn=turn, end=end) if self.vad_events:
                return [server_event("input_audio_buffer.speech_stopped", audio_end_ms=end, item_id=self.item_id(turn))]
            case TranscriptEvent(text=text, turn=turn, speaker=speaker, speaker_name=name) if turn is not None:
                said = self.texts.setdefault(turn, [])
                delta = text if said else text.lstrip()
                said.append(delta)
                return [self._delta(turn, delta, None if speaker is None else name or f"speaker_{speaker}")]
            case TurnEnded() as ended:
                return self._completed(ended)
        return []

    def _delta(self, turn: int, delta: str, speaker: str | None) -> dict[str, Any]:
        """A delta; with `transcription.voices`, this service's `speaker`: the enrolled voice's name once the
        speaker is matched, else `speaker_N`."""
        speaking = {} if speaker is None else {"speaker": speaker}
        return server_event(
            "conversation.item.input_audio_transcription.delta",
            item_id=self.item_id(turn),
            content_index=0,
            delta=delta,
            **speaking,
        )

    def _completed(self, ended: TurnEnded) -> list[dict[str, Any]]:
        item_id = self.item_id(ended.turn)
        self.texts.pop(ended.turn, None)
        transcript = ended.text
        previous, self.previous_item_id = self.previous_item_id, item_id
        self.uncommitted_ms = 0
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        events = [server_event("input_audio_buffer.committed", item_id=item_id, previous_item_id=previous)]
        if self.beta:
            events.append(server_event("conversation.item.created", previous_item_id=previous, item=item))
        else:
            events.append(server_event("conversation.item.added", previous_item_id=previous, item=item))
        usage = {"type": "duration", "seconds": round(max(0, ended.end - ended.start) / 1000, 3)}
        events.append(
            server_event(
                "conversation.item.input_audio_transcription.completed",
                item_id=item_id,
                content_index=0,
                transcript=transcript,
                usage=usage,
            )
        )
        if not self.beta:
            done = {**item, "content": [{"type": "input_audio", "transcript": transcript}]}
            events.append(server_event("conversation.item.done", previous_item_id=previous, item=done))
        return events
