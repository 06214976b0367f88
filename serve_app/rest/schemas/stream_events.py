"""The server-sent events of `stream=true` (OpenAI's shapes): the text as it is final, then the whole, or an
error after the stream began."""

from typing import Literal

from pydantic import BaseModel


class TranscriptTextDelta(BaseModel):
    """`stream=true`: the next piece of the text, final, in timeline order."""

    type: Literal["transcript.text.delta"] = "transcript.text.delta"
    delta: str


class TranscriptTextSegment(BaseModel):
    """`stream=true` with task=diarize: one speaker's segment, sent once the speakers are known."""

    type: Literal["transcript.text.segment"] = "transcript.text.segment"
    id: str
    start: float
    end: float
    text: str
    speaker: str


class TranscriptTextDone(BaseModel):
    """`stream=true`: the last event; `text` is the whole transcript, the deltas joined."""

    type: Literal["transcript.text.done"] = "transcript.text.done"
    text: str


class StreamErrorDetail(BaseModel):
    message: str
    type: Literal["invalid_request_error", "server_error"]


class StreamError(BaseModel):
    """`stream=true`: the request failed after the stream began (OpenAI's error event shape)."""

    type: Literal["error"] = "error"
    error: StreamErrorDetail
