"""The multipart form of `POST /v1/audio/translations`."""

from pydantic import Field, field_validator, model_validator

from deployments.types import AnalysisOptions, DiarizationOptions, TranscriptionOptions
from serve_app.rendering.response_formats import SUBTITLE_FORMATS, ResponseFormat
from serve_app.rest.schemas.audio_form import TEXT_ONLY_FORMATS, AudioForm, language_code

TRANSLATION_FORMATS = (
    ResponseFormat.json,
    ResponseFormat.text,
    ResponseFormat.srt,
    ResponseFormat.verbose_json,
    ResponseFormat.vtt,
)


class TranslationForm(AudioForm):
    """The multipart form of `POST /v1/audio/translations` (OpenAI's): speech in any language, English text out.
    Only OpenAI's fields (and `url`, `language`): diarization, analysis and the transcription-only fields are
    refused by name (400), as any field this form does not know."""

    language: str | None = Field(
        None,
        description="ISO-639-1 code of the spoken language (not OpenAI's: its translations detect it); detected"
        " if omitted, empty, `auto` or `automatic`.",
    )
    prompt: str | None = Field(
        None,
        max_length=4096,
        description="OpenAI's meaning: English text to guide Whisper's style or spelling (never an LLM instruction"
        " here).",
    )
    temperature: float = Field(0.0, ge=0.0, le=1.0, description="0 uses Whisper's fallback schedule.")
    response_format: ResponseFormat = Field(
        ResponseFormat.json, description="json, text, srt, verbose_json or vtt (diarized_json has no translation)."
    )

    @field_validator("language")
    @classmethod
    def known_language(cls, language: str | None) -> str | None:
        return language_code(language)

    @model_validator(mode="after")
    def consistent(self) -> "TranslationForm":
        if self.response_format not in TRANSLATION_FORMATS:
            raise ValueError(
                f"response_format={self.response_format} is not a translation's: use json, text, srt, verbose_json"
                " or vtt"
            )
        return self

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language,
            task="translate",
            word_timestamps=self.response_format in SUBTITLE_FORMATS,  # cues are cut from the words
            segment_timestamps=self.response_format not in TEXT_ONLY_FORMATS,
            prompt=self.prompt,
            temperature=self.temperature,
            redaction=self._redaction,
        )

    def diarization_options(self) -> DiarizationOptions | None:
        return None  # a translation has no speakers

    def analysis_options(self) -> AnalysisOptions | None:
        return None  # nor an analysis
