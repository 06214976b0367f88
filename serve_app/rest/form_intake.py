"""The REST API's forms read into their models, for the intake (`serve_app.common.intake`): the fields as they
streamed in (the file to the spool), those a flat model cannot read parsed first (`openai_fields`), then
validated; the model checked, and a transcription's analysis fields read (`analysis_fields`)."""

from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from deployments.types import KnownVoice
from serve_app.common.errors import body_issues
from serve_app.common.intake import Intake
from serve_app.common.redaction import redaction_options
from serve_app.common.upload import ReceivedForm
from serve_app.common.voices import split_ids
from serve_app.rest.analysis_fields import analysis_options
from serve_app.rest.openai_fields import openai_field_names, pop_chunking_strategy, pop_known_speakers
from serve_app.rest.schemas.transcription_form import ServerVadChunking, Task, TranscriptionForm
from serve_app.rest.schemas.translation_form import TranslationForm
from serve_app.rest.vocabulary_fields import vocabulary

LIST_FIELDS = {
    "timestamp_granularities[]": "timestamp_granularities[]",
    "timestamp_granularities": "timestamp_granularities[]",
    "hotwords[]": "hotwords[]",
    "hotwords": "hotwords[]",
    "voices[]": "voices[]",
    "voices": "voices[]",
    "redact[]": "redact[]",
    "redact": "redact[]",
}
FORM_FIELDS = frozenset(
    {field.alias or name for name, field in TranscriptionForm.model_fields.items()}
    | set(LIST_FIELDS)
    | openai_field_names()
)
TRANSLATION_FIELDS = frozenset(field.alias or name for name, field in TranslationForm.model_fields.items()) | {"redact"}
TRANSLATION_LIST_FIELDS = {"redact[]": "redact[]", "redact": "redact[]"}
OFF_VALUES = frozenset({"false", "0", "none", "null"})
"""A field this service does not know, given one of these values, asks for nothing: it is let through."""


def unsupported_fields(error: ValidationError) -> list[str]:
    return [str(issue["loc"][0]) for issue in error.errors() if issue["type"] == "extra_forbidden"]


VoiceLookup = Callable[[list[str]], Awaitable[list[KnownVoice]]]
"""The caller's enrolled voices of the given ids, or a 400 naming an id it has none of
(`serve_app.common.voices.known_voices` for the calling key)."""


async def read_transcription_form(
    request: Request, intake: Intake, max_file_bytes: int, synchronous: bool, voices: VoiceLookup, owner: str
) -> TranscriptionForm:
    """The transcription form, validated, its model checked, with its known speakers, enrolled voices,
    analysis options and redaction (hashed within `owner`'s scope)."""
    received = await intake.receive(request, max_file_bytes)
    chunking_given, detection = pop_chunking_strategy(received.fields)
    known_speakers = pop_known_speakers(received.fields, intake.spool_path)
    values = form_values(received, FORM_FIELDS, LIST_FIELDS)
    if chunking_given:
        values["chunking_strategy"] = "auto" if detection is None else ServerVadChunking(**detection.model_dump())
    form = validated(
        TranscriptionForm, values, "this service", "see the API reference at /docs for the fields it takes"
    )
    if known_speakers and form.task != Task.diarize:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, "known_speaker_names[] requires task=diarize or response_format=diarized_json"
        )
    if synchronous and form.callback_url is not None:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            "callback_url is for jobs (POST /v1/audio/transcriptions/async): a synchronous request answers itself",
        )
    intake.check_model(form.model)
    analysis = analysis_options(form, intake.config.analysis, synchronous)
    known_voices = await voices(split_ids(form.voices)) if form.voices else []
    form.complete(known_speakers, analysis, vocabulary(form, intake.config.vocabulary), known_voices)
    form.set_redaction(redaction_options(form.redact, form.redact_mode, owner, form.language))
    return form


async def read_translation_form(request: Request, intake: Intake, owner: str) -> TranslationForm:
    """OpenAI's translation form, validated, its model checked; a transcription-only field (diarization,
    analysis, ...) is a 400 that names it."""
    received = await intake.receive(request, intake.config.limits.max_sync_upload_bytes)
    values = form_values(received, TRANSLATION_FIELDS, TRANSLATION_LIST_FIELDS)
    fields = ", ".join(sorted(TRANSLATION_FIELDS))
    form = validated(TranslationForm, values, "/v1/audio/translations", f"a translation takes {fields}")
    intake.check_model(form.model)
    form.set_redaction(redaction_options(form.redact, form.redact_mode, owner, "en"))  # the text is English
    return form


def form_values(received: ReceivedForm, known: frozenset[str], list_fields: dict[str, str]) -> dict[str, object]:
    """The received fields as the form model's values: empty ones left out (as in HTML forms), as are unknown
    ones given only "off" values (they ask for nothing); a list field's values as a list, others' last value."""
    values: dict[str, object] = {}
    for name, given in received.fields.items():
        given = [value for value in given if value != ""]  # an empty field means "not given", as in HTML forms
        if name not in known and all(value.strip().lower() in OFF_VALUES for value in given):
            continue
        if given:
            if name in list_fields:  # `hotwords` and `hotwords[]` together: one list
                key = list_fields[name]
                previous = values.get(key)
                values[key] = [*(previous if isinstance(previous, list) else []), *given]
            else:
                values[name] = given[-1]
    if received.file is not None:
        values["file"] = received.file
    return values


FormT = TypeVar("FormT", TranscriptionForm, TranslationForm)


def validated(form_type: type[FormT], values: dict[str, object], where: str, what_it_takes: str) -> FormT:
    """The form, or a 400 naming the fields `where` does not support, or FastAPI's 422 for invalid values."""
    try:
        form = form_type.model_validate(values)
    except ValidationError as error:
        if unsupported := unsupported_fields(error):
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST,
                f"not supported by {where}: {', '.join(repr(name[:64]) for name in unsupported)}; remove the field"
                f" ({what_it_takes})",
            ) from None
        raise RequestValidationError(body_issues(error)) from None
    if form.file is not None and form.file.size == 0:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the uploaded file is empty")
    return form
