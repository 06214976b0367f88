"""An AssemblyAI transcript request as this service's job: the options the pipeline runs with, and what the job
keeps for rendering (`Stored`, the job's render dict: the request's fields to echo, and the webhook's header)."""

from typing import Any, Literal

from fastapi import HTTPException, status
from pydantic import BaseModel

from deployments.redaction import RedactionClass, RedactionOptions, unserved_classes
from deployments.transcriber.languages import is_whisper_language
from deployments.types import AnalysisOptions, DiarizationOptions, TranscriptionOptions
from deployments.vocabulary import Vocabulary
from serve_app.assemblyai.config import AssemblyAIConfig
from serve_app.assemblyai.schemas import TranscriptParams
from serve_app.common.edge import PROTOCOL_KEY
from serve_app.common.vocabulary import VocabularyRefused, spelling_from, vocabulary_from

PROTOCOL: Literal["assemblyai"] = "assemblyai"
DEFAULT_LANGUAGE_CODE = "en_us"
"""AssemblyAI's language when a request names none and does not ask for detection."""


class Stored(BaseModel):
    """What an AssemblyAI job keeps besides the domain request: how to answer its polls and its webhook."""

    protocol: Literal["assemblyai"] = PROTOCOL
    audio_url: str
    echo: dict[str, Any]
    """The request's fields as given (the webhook's secret left out), echoed as AssemblyAI echoes them."""
    model: str
    """The id of `model_ids` the transcript is billed as (`speech_model_used`)."""
    language_code: str | None
    """As given (or AssemblyAI's default); None: detected."""
    punctuate: bool
    speaker_labels: bool
    multichannel: bool = False
    webhook_header: tuple[str, str] | None = None

    def render(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class AudioForm:
    """The request as `serve_app.common.intake.Intake` reads one (`AudioRequest`)."""

    def __init__(self, params: TranscriptParams, config: AssemblyAIConfig, url: str | None) -> None:
        self.params, self.url = params, url
        self.model = _model(params.speech_model, config)
        self.language_code = params.language_code or (None if params.language_detection else DEFAULT_LANGUAGE_CODE)
        self.language = whisper_language(self.language_code) if self.language_code else None
        self.vocabulary = vocabulary(params)
        self.redaction = redaction(params, self.language)

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language,
            word_timestamps=True,
            profanity_filter=bool(self.params.filter_profanity),
            temperature=self.params.temperature or 0.0,
            vocabulary=self.vocabulary,
            multichannel=bool(self.params.multichannel),
            redaction=self.redaction,
        )

    def diarization_options(self) -> DiarizationOptions | None:
        """With `multichannel` each channel is a speaker (its utterances), or with `speaker_labels` too, speakers
        are told apart within each channel."""
        multichannel = bool(self.params.multichannel)
        if not self.params.speaker_labels:
            return DiarizationOptions() if multichannel else None
        bounds = self.params.speaker_options
        return DiarizationOptions(
            num_speakers=self.params.speakers_expected,
            min_speakers=bounds.min_speakers_expected if bounds else None,
            max_speakers=bounds.max_speakers_expected if bounds else None,
            within_channels=multichannel,
        )

    def analysis_options(self) -> AnalysisOptions | None:
        return None

    def stored(self) -> Stored:
        params = self.params
        header = (params.webhook_auth_header_name, params.webhook_auth_header_value)
        return Stored(
            audio_url=params.audio_url,
            echo=params.model_dump(exclude_none=True, exclude={"audio_url", "webhook_auth_header_value"}),
            model=self.model,
            language_code=self.language_code,
            punctuate=params.punctuate is not False,
            speaker_labels=bool(params.speaker_labels),
            multichannel=bool(params.multichannel),
            webhook_header=header if header[0] is not None and header[1] is not None else None,
        )


POLICIES: dict[str, RedactionClass] = {
    "person_name": RedactionClass.person_name,
    "location": RedactionClass.location,
    "location_address": RedactionClass.location,
    "location_address_street": RedactionClass.location,
    "location_city": RedactionClass.location,
    "location_country": RedactionClass.location,
    "location_state": RedactionClass.location,
    "organization": RedactionClass.organization,
    "phone_number": RedactionClass.phone_number,
    "email_address": RedactionClass.email_address,
    "credit_card_number": RedactionClass.credit_card_number,
    "us_social_security_number": RedactionClass.us_social_security_number,
    "date_of_birth": RedactionClass.date_of_birth,
    "banking_information": RedactionClass.iban,
    "ip_address": RedactionClass.ip_address,
    "number_sequence": RedactionClass.numbers,
}
"""AssemblyAI's PII policies this service redacts, as its entity classes; any other policy is a 400 naming it."""


def redaction(params: TranscriptParams, language: str | None) -> RedactionOptions | None:
    """`redact_pii` with its policies; `redact_pii_sub` `hash` is AssemblyAI's `####` (a mask), `entity_name` its
    `[PERSON_NAME]`; `redact_pii_audio` also writes the audio with a tone over every redacted word."""
    if not params.redact_pii:
        return None
    policies = [policy.strip().lower() for policy in params.redact_pii_policies or []]
    if unknown := [policy for policy in policies if policy not in POLICIES]:
        offered = ", ".join(POLICIES)
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"redact_pii_policies: {unknown[0][:64]!r} is not supported: the policies served are {offered}",
        )
    classes = list(dict.fromkeys(POLICIES[policy] for policy in policies))
    if unserved := unserved_classes(classes, language):
        named = ", ".join(cls.value for cls in unserved)
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"redact_pii_policies: {named} are served in English only, not {language!r}"
        )
    entity_names = params.redact_pii_sub == "entity_name"
    audio = (params.redact_pii_audio_quality or "mp3") if params.redact_pii_audio else None
    return RedactionOptions(classes=classes, mode="class" if entity_names else "mask", mask_char="#", audio=audio)


def _model(speech_model: str | None, config: AssemblyAIConfig) -> str:
    if speech_model is None:
        return config.default_model
    if speech_model not in config.speech_models:
        offered = ", ".join(config.speech_models)
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"speech_model {speech_model[:64]!r} is not offered: one of {offered}"
        )
    return config.speech_models[speech_model]


def vocabulary(params: TranscriptParams) -> Vocabulary | None:
    """`keyterms_prompt` and `word_boost` as terms (in that order of priority; `boost_param` does not grade
    them), `custom_spelling` as spellings; a 400 naming the field for a limit broken."""
    try:
        spellings = [spelling_from("custom_spelling", s.from_, s.to) for s in params.custom_spelling or ()]
        return vocabulary_from(
            {"keyterms_prompt": params.keyterms_prompt or [], "word_boost": params.word_boost or []},
            spellings=spellings,
            spellings_field="custom_spelling",
        )
    except VocabularyRefused as refused:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(refused)) from None


def whisper_language(code: str) -> str:
    """AssemblyAI's code (`en_us`, `es`, `pt`, ...) as Whisper's, or 400."""
    language = code.lower().replace("-", "_").partition("_")[0]
    if not is_whisper_language(language):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"language_code {code[:16]!r} is not supported")
    return language


def is_ours(render: dict[str, Any]) -> bool:
    return render.get(PROTOCOL_KEY) == PROTOCOL
