"""A transcription session's configuration, as OpenAI's two session shapes carry it, and what it asks of the
LiveTranscriber.

The beta shape (`transcription_session.update`: `input_audio_format`, `input_audio_transcription`,
`turn_detection`) and the GA shape (`session.update` with `session.type == "transcription"`:
`audio.input.format`, `.transcription`, `.turn_detection`) update one `TranscriptionConfig`; only the fields
present change, and `null` turn detection means the client commits. Each shape is rendered back in
`transcription_session.*` or `session.*` events.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from deployments.live.events import Encoding, SessionSettings
from deployments.transcriber.languages import is_whisper_language
from deployments.vocabulary import Vocabulary
from serve_app.common.redaction import REDACT_FIELD_DOC, REDACT_MODE_DOC
from serve_app.common.vocabulary import dictionary_name, hotword_terms, vocabulary_from

AudioFormat = Literal["pcm16", "g711_ulaw", "g711_alaw"]
FORMAT_ENCODINGS: dict[AudioFormat, tuple[Encoding, int]] = {
    "pcm16": ("pcm_s16le", 24000),
    "g711_ulaw": ("pcm_mulaw", 8000),
    "g711_alaw": ("pcm_alaw", 8000),
}
"""Each OpenAI input format as the LiveTranscriber's encoding and sample rate (resampled there to 16 kHz)."""
GA_FORMATS: dict[str, AudioFormat] = {"audio/pcm": "pcm16", "audio/pcmu": "g711_ulaw", "audio/pcma": "g711_alaw"}


class ServerVad(BaseModel):
    """Silero VAD: a turn ends at every pause of `silence_duration_ms`."""

    model_config = ConfigDict(extra="ignore")  # create_response, interrupt_response: no response to create

    type: Literal["server_vad"]
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    prefix_padding_ms: int = Field(300, ge=0, le=2000)
    silence_duration_ms: int = Field(500, ge=32, le=10_000)


class SemanticVad(BaseModel):
    """Smart Turn judges each pause; an unfinished turn ends after 3 s of silence (as the nexara protocol's
    `turn_detection=smart`, whatever the eagerness)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["semantic_vad"]
    eagerness: Literal["low", "medium", "high", "auto"] = "auto"


TurnDetection = Annotated[ServerVad | SemanticVad, Field(discriminator="type")]


OWN_FIELDS = ("hotwords", "dictionary", "voices", "redact", "redact_mode")
"""This service's fields beside OpenAI's in `input_audio_transcription` / `audio.input.transcription` (the SDK
sends a session as the dict given, and its typed events keep unknown fields); shown only when set."""


class Transcription(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    language: str | None = None
    prompt: str | None = None
    hotwords: list[str] | None = Field(None, description="Terms the session will contain (this service's field).")
    dictionary: str | None = Field(None, max_length=64, description="A named term list, e.g. `medical`.")
    voices: list[str] | None = Field(
        None, description="Ids of voices enrolled with this key: the speakers are labelled and named (this service's)."
    )
    redact: list[str] | None = Field(None, max_length=32, description=REDACT_FIELD_DOC)
    redact_mode: str | None = Field(None, max_length=32, description=REDACT_MODE_DOC)

    @field_validator("dictionary")
    @classmethod
    def no_dictionary(cls, dictionary: str | None) -> str | None:
        return dictionary_name(dictionary)

    @field_validator("hotwords", mode="before")
    @classmethod
    def terms_within_limits(cls, hotwords: object) -> object:
        if isinstance(hotwords, str):
            hotwords = [hotwords]
        if not isinstance(hotwords, list) or not all(isinstance(term, str) for term in hotwords):
            return hotwords  # the type's own error
        return hotword_terms(hotwords)

    @property
    def vocabulary(self) -> Vocabulary | None:
        return vocabulary_from({"hotwords": self.hotwords or []}, dictionary=self.dictionary)

    def shown(self) -> dict[str, Any]:
        """As the session events show it: OpenAI's fields always, ours when set."""
        shown = self.model_dump()
        return {name: value for name, value in shown.items() if name not in OWN_FIELDS or value}

    @field_validator("language")
    @classmethod
    def known_language(cls, language: str | None) -> str | None:
        if not language:
            return None
        if not is_whisper_language(language.strip().lower()):
            raise ValueError(f"unsupported language {language[:16]!r}: use an ISO-639-1 code such as 'en' or 'fr'")
        return language.strip().lower()


class TranscriptionConfig(BaseModel):
    """The session's effective configuration (OpenAI's defaults: pcm16, server VAD)."""

    format: AudioFormat = "pcm16"
    transcription: Transcription = Transcription()
    turn_detection: TurnDetection | None = ServerVad(type="server_vad")
    noise_reduction: dict[str, Any] | None = None
    include: list[str] | None = None

    def settings(self) -> SessionSettings:
        """What the LiveTranscriber is asked for: mono audio, one turn per item."""
        encoding, rate = FORMAT_ENCODINGS[self.format]
        common: dict[str, Any] = {
            "encoding": encoding,
            "sample_rate": rate,
            "language": self.transcription.language,
            "vocabulary": self.transcription.vocabulary,
            "diarize": bool(self.transcription.voices),  # the voices name speakers: they are told apart first
        }
        match self.turn_detection:
            case ServerVad() as vad:
                return SessionSettings(
                    **common,
                    turn_detection="vad",
                    vad_threshold=vad.threshold,
                    silence_ms=vad.silence_duration_ms,
                    preroll_ms=vad.prefix_padding_ms,
                )
            case SemanticVad():
                return SessionSettings(**common, turn_detection="smart")
            case _:
                return SessionSettings(**common, turn_detection="manual")

    @property
    def prefix_padding_ms(self) -> int:
        return self.turn_detection.prefix_padding_ms if isinstance(self.turn_detection, ServerVad) else 300

    def updated(self, session: dict[str, Any], beta: bool) -> "TranscriptionConfig":
        """This configuration with the fields `session` carries (either shape) changed; raises
        pydantic.ValidationError (or ValueError) naming a bad one."""
        fields = _beta_fields(session) if beta else _ga_fields(session)
        merged = self.model_dump() | fields
        if "transcription" in fields and fields["transcription"] is not None:
            merged["transcription"] = self.transcription.model_dump() | fields["transcription"]
        if merged.get("transcription") is None:
            merged["transcription"] = {}
        return TranscriptionConfig.model_validate(merged)

    def beta_session(self, session_id: str) -> dict[str, Any]:
        """The session as `transcription_session.created` / `.updated` show it."""
        return {
            "id": session_id,
            "object": "realtime.transcription_session",
            "input_audio_format": self.format,
            "input_audio_transcription": self.transcription.shown(),
            "turn_detection": self._turn_detection(),
            "input_audio_noise_reduction": self.noise_reduction,
            "include": self.include,
            "modalities": ["text"],
        }

    def ga_session(self, session_id: str) -> dict[str, Any]:
        """The session as `session.created` / `.updated` show it."""
        audio_format: dict[str, Any] = {"type": {v: k for k, v in GA_FORMATS.items()}[self.format]}
        if self.format == "pcm16":
            audio_format["rate"] = 24000
        return {
            "type": "transcription",
            "id": session_id,
            "object": "realtime.transcription_session",
            "audio": {
                "input": {
                    "format": audio_format,
                    "transcription": self.transcription.shown(),
                    "turn_detection": self._turn_detection(),
                    "noise_reduction": self.noise_reduction,
                }
            },
            "include": self.include,
        }

    def _turn_detection(self) -> dict[str, Any] | None:
        return None if self.turn_detection is None else self.turn_detection.model_dump()


def _beta_fields(session: dict[str, Any]) -> dict[str, Any]:
    names = {
        "input_audio_format": "format",
        "input_audio_transcription": "transcription",
        "turn_detection": "turn_detection",
        "input_audio_noise_reduction": "noise_reduction",
        "include": "include",
    }
    return {names[key]: value for key, value in session.items() if key in names}


def _ga_fields(session: dict[str, Any]) -> dict[str, Any]:
    if session.get("type", "transcription") != "transcription":
        raise ValueError('this server holds transcription sessions only: send session.type "transcription"')
    audio_input = ((session.get("audio") or {}).get("input")) or {}
    fields = {
        key: audio_input[key] for key in ("transcription", "turn_detection", "noise_reduction") if key in audio_input
    }
    if "include" in session:
        fields["include"] = session["include"]
    if "format" in audio_input:
        audio_format = audio_input["format"] or {}
        kind = audio_format.get("type", "audio/pcm") if isinstance(audio_format, dict) else audio_format
        if kind not in GA_FORMATS:
            raise ValueError(f"audio.input.format.type must be one of {', '.join(GA_FORMATS)}; got {kind!r}")
        if kind == "audio/pcm" and audio_format.get("rate", 24000) != 24000:
            raise ValueError("audio/pcm is 24000 Hz only, as OpenAI's")
        fields["format"] = GA_FORMATS[kind]
    return fields
