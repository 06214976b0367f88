"""Who speaks: what a client asks of diarization (counts, known speakers' clips, enrolled voices), and what the
Diarizer answers (turns, and the names matched to them). Part of `deployments.types`, which exports it."""

from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

# The enums below carry no docstring on purpose: pydantic would put it into the HTTP API's schema.


# What kind of conversation a diarized recording is: a preset of speaker-count hints for the pipeline
# (deployments/diarization/_pyannote.py); the edge's `diarization_setting` form field.
class DiarizationSetting(StrEnum):
    general = "general"
    meeting = "meeting"
    telephonic = "telephonic"


class KnownSpeaker(BaseModel):
    """A speaker the client names, and a short clip of their voice (OpenAI's `known_speaker_names[]` with
    `known_speaker_references[]`)."""

    name: str
    reference_path: str = Field(
        description="The clip as sent, spooled beside the request's input; for the Diarizer, its decoded 16 kHz copy."
    )


class KnownVoice(BaseModel):
    """An enrolled voice (deployments/voices/): its name and the speaker encoder's embedding of its clip."""

    voice_id: str
    name: str
    embedding: list[float] = Field(description="The speaker encoder's unit vector for the enrolled speech.")
    encoder: str = Field(description="The encoder that made it: a vector of another compares with nothing.")


class VoicePrint(BaseModel):
    """What an enrolment clip gives: its speech's embedding, and how much speech that was."""

    embedding: list[float]
    speech_s: float
    encoder: str


class DiarizationOptions(BaseModel):
    """What a client may ask of the diarization pipeline for one request."""

    num_speakers: int | None = Field(None, ge=1, description="Exact number of speakers, when known.")
    min_speakers: int | None = Field(None, ge=1, description="At least this many speakers; num_speakers wins.")
    max_speakers: int | None = Field(None, ge=1, description="At most this many speakers; num_speakers wins.")
    setting: DiarizationSetting = DiarizationSetting.general
    known_speakers: list[KnownSpeaker] = Field(
        default_factory=list, description="Name the diarized speakers whose voice matches one of these clips."
    )
    within_channels: bool = Field(
        False, description="multichannel: speakers told apart within each channel (else a channel is a speaker)."
    )
    known_voices: list[KnownVoice] = Field(
        default_factory=list, description="Name the diarized speakers whose voice matches one of these enrolled voices."
    )

    @model_validator(mode="after")
    def bounds_in_order(self) -> "DiarizationOptions":
        if self.min_speakers is not None and self.max_speakers is not None and self.min_speakers > self.max_speakers:
            raise ValueError("min_speakers must not exceed max_speakers")
        return self


class SpeakerTurn(BaseModel):
    """A stretch of time in which a speaker is speaking."""

    speaker: str
    start: float
    end: float


class Diarization(BaseModel):
    """Who speaks when, as a pyannote pipeline says it."""

    turns: list[SpeakerTurn] = Field(description="Every speaker's turns; they overlap where people talk at once.")
    exclusive_turns: list[SpeakerTurn] = Field(
        description="The same with overlaps given to one speaker only: what assigning words to speakers needs."
    )
    names: dict[str, str] = Field(
        default_factory=dict, description="Speaker label -> the known speaker's name, for speakers matched to one."
    )
