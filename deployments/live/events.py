"""What a live session is asked for and what it says back: the settings a client chose, and the events the
LiveTranscriber yields. The Ingress sends each event as one JSON text frame, as the nexara SDK's realtime
client types them (`nexara/types/realtime.py`): times are integer milliseconds on the audio clock (since the
first sample sent), multiples of 80."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from deployments.billing.ledger import ChargeDetails
from deployments.redaction.options import RedactionOptions
from deployments.types import KnownVoice
from deployments.vocabulary.terms import Vocabulary

Encoding = Literal["pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw"]
TurnDetection = Literal["none", "smart", "vad", "manual"]
"""none: no turns; smart: Smart Turn judges each pause; vad: every pause ends a turn; manual: only the
client's commit does (`LiveTranscriber.commit`)."""
SAMPLE_RATES = (8000, 16000, 24000, 44100, 48000)
FRAME_MS = 80
"""Word times are multiples of this: the clock the nexara protocol reports on."""
BYTES_PER_SAMPLE: dict[Encoding, int] = {"pcm_s16le": 2, "pcm_f32le": 4, "pcm_mulaw": 1, "pcm_alaw": 1}
MAX_SPEAKERS = 4
"""Live speaker labels go up to this many voices in a session (then each word goes to the nearest)."""


class SessionBilling(BaseModel):
    """Who pays for a session's audio and on what terms: the LiveTranscriber charges it when the session closes,
    however it ends (the edge that opened it may be gone: a redeploy kills it mid-session)."""

    owner: str = Field(description="The key's SHA-256.")
    details: ChargeDetails = Field(description="The charge's task, model and price per minute.")


class SessionSettings(BaseModel):
    """A session's negotiated parameters (the WebSocket query, validated by the Ingress)."""

    encoding: Encoding = "pcm_s16le"
    sample_rate: int = 16000
    channels: Literal[1, 2] = 1
    multichannel: bool = Field(False, description="With 2 channels: each transcribed on its own, not downmixed.")
    diarize: bool = False
    delay_ms: int = Field(480, description="How much audio arrives between two looks at the buffer.")
    turn_detection: TurnDetection = "none"
    vad_threshold: float = Field(0.5, ge=0.0, le=1.0, description="Silero's probability that starts speech.")
    silence_ms: int = Field(220, ge=32, le=10_000, description="Silence that ends speech (rounded up to 32 ms).")
    preroll_ms: int = Field(300, ge=0, le=2000, description="Audio kept before speech starts.")
    language: str | None = Field(None, description="Whisper's language; None: detected on the first 3 s of speech.")
    vocabulary: Vocabulary | None = Field(None, description="Terms the session will contain (hotwords, dictionary).")
    voices: list[KnownVoice] = Field(
        default_factory=list, description="With `diarize`: enrolled voices that name the speakers they match."
    )
    read_again: bool = Field(
        True,
        description="Whether groups of utterances are read again for the final transcript (`live.final_pass`): off"
        " for a protocol whose clients never see it (Deepgram's), so that its turn ends wait for nothing.",
    )

    redaction: RedactionOptions | None = Field(
        None, description="Entities hidden in every event; streamed words held while one may be forming."
    )
    billing: SessionBilling | None = Field(None, description="Who is charged at the end; None: no one.")

    @property
    def channels_transcribed(self) -> int:
        return self.channels if self.multichannel else 1

    def billed_s(self, received_bytes: int) -> float:
        """What `received_bytes` of this session's audio is charged as: seconds times the channels transcribed."""
        return (
            received_bytes
            / (BYTES_PER_SAMPLE[self.encoding] * self.channels)
            / self.sample_rate
            * (self.channels_transcribed)
        )


class LiveWord(BaseModel):
    text: str = Field(description="The word, trimmed; punctuation attached.")
    start: int
    end: int
    speaker: int | None = None
    speaker_name: str | None = Field(None, description="The enrolled voice that names `speaker`, once matched.")


class TranscriptEvent(BaseModel):
    """Final words, never revised, all of one speaker."""

    type: Literal["transcript"] = "transcript"
    text: str = Field(description="The words as the model wrote them, leading space included.")
    words: list[LiveWord]
    speaker: int | None = None
    speaker_name: str | None = Field(
        None, description="The enrolled voice (`voices`) that names `speaker`, once matched."
    )
    channel: int | None = None
    turn: int | None = None


class SpeechStarted(BaseModel):
    type: Literal["speech.started"] = "speech.started"
    turn: int
    start: int
    channel: int | None = None


class SpeechEnded(BaseModel):
    type: Literal["speech.ended"] = "speech.ended"
    turn: int
    end: int
    channel: int | None = None


class TurnEnded(BaseModel):
    type: Literal["turn.end"] = "turn.end"
    turn: int
    start: int
    end: int
    confidence: float | None = Field(
        description="Smart Turn's probability that the turn is complete: >= 0.5 it judged so; < 0.5 the turn"
        " was closed by the silence limit; None: closed by the end of input, a pause (`vad`) or a commit."
    )
    text: str
    words: list[LiveWord]
    channel: int | None = None


class SessionReady(BaseModel):
    """The first item of a session's event stream, for the Ingress only: the stream is in place, so audio
    may flow (see `deployments/live/_routing.py` for why that order matters)."""

    type: Literal["session.ready"] = "session.ready"


class SessionEnded(BaseModel):
    type: Literal["session.ended"] = "session.ended"
    audio_duration_ms: int
    channels_transcribed: int
    billed_ms: int
    text: str | list[str]


ErrorReason = Literal[
    "invalid_config",
    "unauthorized",
    "invalid_audio",
    "session_full",
    "invalid_message",
    "idle_timeout",
    "audio_backlog",
    "insufficient_balance",
    "internal",
]
CLOSE_CODES: dict[str, int] = {
    "invalid_config": 4000,
    "unauthorized": 4001,
    "invalid_audio": 4002,
    "session_full": 4003,
    "invalid_message": 4004,
    "idle_timeout": 4008,
    "audio_backlog": 4009,
    "insufficient_balance": 4402,
    "internal": 1011,
}
"""The WebSocket close code that follows each `error` frame, as the nexara SDK maps them."""


class SessionFailed(BaseModel):
    """Why a session cannot go on: sent as an `error` frame, followed by a close with `CLOSE_CODES[code]`."""

    type: Literal["error"] = "error"
    code: ErrorReason
    message: str


LiveEvent = Annotated[
    TranscriptEvent | SpeechStarted | SpeechEnded | TurnEnded | SessionReady | SessionEnded | SessionFailed,
    Field(discriminator="type"),
]
