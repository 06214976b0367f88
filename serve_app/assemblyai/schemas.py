"""AssemblyAI's request bodies as this service reads them, and what it refuses by name.

A field is either supported (read here), or refused with a 400 that names it whenever it asks for something (a
value other than null, false, 0, "" or []: the SDK sends only the fields a caller set, and an "off" value asks
for nothing), never silently ignored."""

from typing import Any, Literal

from fastapi import HTTPException, status
from pydantic import BaseModel, ConfigDict, Field, model_validator

REFUSED: dict[str, str] = {
    "keyterms_prompt_options": "the keyterms' match strength is not adjustable: leave it out",
    "prompt": "a free-text prompt is not supported: give the terms in keyterms_prompt or word_boost",
    "format_text": "the text is always formatted (Whisper writes cased text with numerals)",
    "disfluencies": "filler words (um, uh) are not transcribed",
    "audio_start_from": "transcribing part of a file is not supported: cut the file first",
    "audio_end_at": "transcribing part of a file is not supported: cut the file first",
    "dual_channel": "dual_channel is deprecated: send multichannel: true",
    "redact_pii_return_unredacted": "an unredacted copy is never kept nor returned once redaction is asked",
    "redact_pii_audio_options": "redacted audio is beeped: leave redact_pii_audio_options out",
}
"""Fields with a reason of their own; any other field the service does not read is refused as not supported
(auto_chapters, entity_detection, summarization, sentiment_analysis, iab_categories, content_safety,
auto_highlights, language_codes, speech_understanding, ...)."""
OFF_VALUES: tuple[object, ...] = (False, "", [], {})


def refuse_unsupported(body: dict[str, Any], supported: set[str]) -> None:
    """400 naming every field of `body` that asks for something this service does not do."""
    asked = [name for name, value in body.items() if name not in supported and not _off(name, value)]
    if not asked:
        return
    reasons = [f"{name[:64]} ({REFUSED.get(name, 'not supported by this service')})" for name in asked]
    raise HTTPException(status.HTTP_400_BAD_REQUEST, f"unsupported parameters: {'; '.join(reasons)}")


def _off(name: str, value: object) -> bool:
    if name == "format_text":  # on is what the service does; off is what it cannot
        return value is None or value is True
    return value is None or value in OFF_VALUES  # 0 == False: a zero asks for nothing either


class SpeakerOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_speakers_expected: int | None = Field(None, ge=1)
    max_speakers_expected: int | None = Field(None, ge=1)


class CustomSpelling(BaseModel):
    """One `custom_spelling` entry: the words the model may write (`from`), and how to write them (`to`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    from_: list[str] = Field(alias="from", min_length=1, max_length=20)
    to: str


class TranscriptParams(BaseModel):
    """`POST /v2/transcript`: the fields this service reads (the rest: `refuse_unsupported`)."""

    model_config = ConfigDict(extra="ignore")

    audio_url: str = Field(min_length=1, max_length=4096)
    speech_model: str | None = None
    language_code: str | None = Field(None, max_length=16)
    language_detection: bool | None = None
    punctuate: bool | None = None
    speaker_labels: bool | None = None
    multichannel: bool | None = None
    speakers_expected: int | None = Field(None, ge=1, le=32)
    speaker_options: SpeakerOptions | None = None
    filter_profanity: bool | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    keyterms_prompt: list[str] | None = None
    word_boost: list[str] | None = None
    boost_param: Literal["low", "default", "high"] | None = None
    custom_spelling: list[CustomSpelling] | None = None
    redact_pii: bool | None = None
    redact_pii_policies: list[str] | None = Field(None, max_length=64)
    redact_pii_sub: Literal["entity_name", "hash"] | None = None
    redact_pii_audio: bool | None = None
    redact_pii_audio_quality: Literal["mp3", "wav"] | None = None
    webhook_url: str | None = Field(None, max_length=2048)
    webhook_auth_header_name: str | None = Field(
        None, min_length=1, max_length=256, pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
    )
    webhook_auth_header_value: str | None = Field(None, max_length=4096)

    @model_validator(mode="after")
    def consistent(self) -> "TranscriptParams":
        if (self.speakers_expected or self.speaker_options) and not self.speaker_labels:
            raise ValueError("speakers_expected and speaker_options need speaker_labels: true")
        if self.language_detection and self.language_code:
            raise ValueError("give language_code or language_detection: true, not both")
        if (self.webhook_auth_header_name is None) != (self.webhook_auth_header_value is None):
            raise ValueError("webhook_auth_header_name and webhook_auth_header_value come together")
        if self.webhook_auth_header_name is not None and self.webhook_url is None:
            raise ValueError("webhook_auth_header_name needs a webhook_url")
        if not self.redact_pii:
            for name in ("redact_pii_policies", "redact_pii_sub", "redact_pii_audio", "redact_pii_audio_quality"):
                if getattr(self, name):
                    raise ValueError(f"{name} needs redact_pii: true")
        elif not self.redact_pii_policies:
            raise ValueError("redact_pii needs redact_pii_policies: the entity types to redact")
        if self.redact_pii_audio and self.multichannel:
            raise ValueError("redact_pii_audio with multichannel is not supported: one of them")
        if self.redact_pii_audio_quality and not self.redact_pii_audio:
            raise ValueError("redact_pii_audio_quality needs redact_pii_audio: true")
        return self


TRANSCRIPT_FIELDS = set(TranscriptParams.model_fields)


class LemurTaskParams(BaseModel):
    """`POST /lemur/v3/generate/task`."""

    model_config = ConfigDict(extra="ignore")

    prompt: str = Field(min_length=1, max_length=100_000)
    transcript_ids: list[str] | None = Field(None, max_length=100)
    input_text: str | None = Field(None, max_length=1_000_000)
    context: str | dict[str, Any] | None = None
    final_model: str = "default"
    max_output_size: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="after")
    def one_input(self) -> "LemurTaskParams":
        if bool(self.transcript_ids) == (self.input_text is not None):
            raise ValueError("give transcript_ids or input_text, one of them")
        return self


LEMUR_FIELDS = set(LemurTaskParams.model_fields)
