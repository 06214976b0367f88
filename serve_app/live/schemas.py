"""The nexara live protocol's session parameters (the upgrade's query string) and its first frame."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from starlette.datastructures import QueryParams

from deployments.live.events import SAMPLE_RATES, SessionSettings
from deployments.vocabulary import MAX_TERM_CHARS, MAX_TERM_WORDS, MAX_TERMS, Vocabulary
from serve_app.common.redaction import REDACT_FIELD_DOC, REDACT_MODE_DOC
from serve_app.common.vocabulary import dictionary_name, hotword_terms, vocabulary_from

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
    hotwords: list[str] = Field(
        default_factory=list,
        description=f"Terms the session will contain: repeated `hotwords` (or `hotwords[]`) parameters, or one"
        f" comma-separated value; at most {MAX_TERMS}, each at most {MAX_TERM_WORDS} words and {MAX_TERM_CHARS}"
        " characters.",
    )
    dictionary: str | None = Field(None, max_length=64, description="A named term list, e.g. `medical`.")
    voices: list[str] = Field(
        default_factory=list,
        description="With diarize=true: ids of voices enrolled with this key (POST /v1/voices); a speaker whose voice"
        " matches one carries its name (`speaker_name`) once matched. Repeated `voices` parameters, or one"
        " comma-separated value.",
    )

    redact: list[str] = Field(
        default_factory=list,
        description=REDACT_FIELD_DOC + " Streamed words are held back only while an entity may still be forming.",
    )
    redact_mode: str | None = Field(None, max_length=32, description=REDACT_MODE_DOC)

    @classmethod
    def from_query(cls, query: QueryParams) -> "LiveSessionQuery":
        """The query string, its repeated `hotwords`, `voices` and `redact` kept (the nexara SDK sends none; other
        clients may)."""
        repeated = ("hotwords", "voices", "redact")
        values: dict[str, Any] = {
            name: value for name, value in query.items() if name.removesuffix("[]") not in repeated
        }
        for name in repeated:
            given = [*query.getlist(name), *query.getlist(f"{name}[]")]
            if given:
                values[name] = given
        return cls.model_validate(values)

    @field_validator("dictionary")
    @classmethod
    def no_dictionary(cls, dictionary: str | None) -> str | None:
        return dictionary_name(dictionary)

    @field_validator("hotwords")
    @classmethod
    def terms_within_limits(cls, hotwords: list[str]) -> list[str]:
        return hotword_terms(hotwords)

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
        if self.voices and not self.diarize:
            raise ValueError("voices needs diarize=true: they name the speakers it finds")
        return self

    def settings(self) -> SessionSettings:
        return SessionSettings(
            **self.model_dump(exclude={"client_id", "hotwords", "dictionary", "voices", "redact", "redact_mode"}),
            vocabulary=self.vocabulary,
        )

    @property
    def vocabulary(self) -> Vocabulary | None:
        return vocabulary_from({"hotwords": self.hotwords}, dictionary=self.dictionary)


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
