"""The nexara live protocol's session parameters (the upgrade's query string) and its first frame."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deployments.live.events import SAMPLE_RATES, SessionSettings

DELAYS_MS = (*range(80, 1201, 80), 2400)
"""The emission delays a live session may ask for (the nexara protocol's set)."""


class LiveSessionQuery(BaseModel):
    """The query string of `GET /v1/transcribe` (a WebSocket upgrade): the session's parameters. A value out
    of range ends the session with `invalid_config` (close 4000) right after the upgrade."""

    model_config = ConfigDict(extra="forbid")

    encoding: Literal["pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw"] = "pcm_s16le"
    sample_rate: int = Field(16000, description="8000, 16000, 24000, 44100 or 48000 Hz; resampled here.")
    channels: int = Field(1, ge=1, le=2, description="Interleaved L R L R when 2.")
    multichannel: bool = Field(False, description="With channels=2: each channel transcribed on its own.")
    diarize: bool = Field(False, description="Speaker labels 0-3 on every word.")
    delay_ms: int = Field(480, description="How often the buffer is read: a multiple of 80 up to 1200, or 2400.")
    turn_detection: Literal["none", "smart"] = "none"
    client_id: str | None = Field(None, max_length=128, description="Echoed in session.created.")

    @field_validator("sample_rate")
    @classmethod
    def supported_rate(cls, rate: int) -> int:
        if rate not in SAMPLE_RATES:
            raise ValueError(f"sample_rate must be one of {', '.join(map(str, SAMPLE_RATES))}")
        return rate

    @field_validator("delay_ms")
    @classmethod
    def supported_delay(cls, delay: int) -> int:
        if delay not in DELAYS_MS:
            raise ValueError("delay_ms must be a multiple of 80 from 80 to 1200, or 2400")
        return delay

    @model_validator(mode="after")
    def two_channels_to_split(self) -> "LiveSessionQuery":
        if self.multichannel and self.channels != 2:
            raise ValueError("multichannel needs channels=2")
        return self

    def settings(self) -> SessionSettings:
        return SessionSettings(**self.model_dump(exclude={"client_id"}))


class RealtimeAudioInfo(BaseModel):
    encoding: str
    sample_rate: int
    channels: int
    multichannel: bool


class RealtimeDiarizationInfo(BaseModel):
    max_speakers: int
    latency_ms: int = Field(description="How long a word waits for its speaker label, about.")


class RealtimeSessionCreated(BaseModel):
    """The first frame of every live session: the negotiated parameters."""

    type: Literal["session.created"] = "session.created"
    session_id: str
    model: str
    delay_ms: int
    audio: RealtimeAudioInfo
    diarization: RealtimeDiarizationInfo | None = None
    turn_detection: str
    client_id: str | None = None
