"""The voices API's bodies, in OpenAI's object style (`object`, list pages with `first_id`/`last_id`)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_NAME_CHARS = 100


class Voice(BaseModel):
    """An enrolled voice: its name and how much speech it was enrolled from (the audio is not kept)."""

    id: str
    object: Literal["voice"] = "voice"
    name: str
    created_at: int = Field(description="Unix seconds.")
    speech_s: float = Field(description="Seconds of speech the voice was enrolled from.")


class VoiceList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Voice]
    first_id: str | None
    last_id: str | None
    has_more: bool


class VoiceFromJob(BaseModel):
    """`POST /v1/voices` as JSON: a speaker of one of the key's finished diarized jobs, from that job's audio."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    job_id: str = Field(min_length=1, max_length=200)
    speaker: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="The speaker's label in that job.")


class VoiceUpdate(BaseModel):
    """`PATCH /v1/voices/{id}`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
