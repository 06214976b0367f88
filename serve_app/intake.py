"""The transcription form's intake, shared by the synchronous route and the async jobs route: stream it in
(the file to the spool), validate it, check the model, and price what it asks for."""

from pathlib import Path
from typing import Any, TypeVar

from fastapi import HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Price
from deployments.storage.spool import remove_spooled
from serve_app.config import AppConfig
from serve_app.openai_fields import openai_field_names, pop_chunking_strategy, pop_known_speakers
from serve_app.schemas import (
    ErrorResponse,
    ServerVadChunking,
    TranscriptionForm,
    TranslationForm,
    ValidationErrorResponse,
)
from serve_app.upload import ReceivedForm, receive_form

UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "The form or the audio cannot be processed."},
    413: {"model": ErrorResponse, "description": "The file or a form field is too large."},
    415: {"model": ErrorResponse, "description": "The body is not a form."},
    422: {"model": ValidationErrorResponse, "description": "A form field is invalid."},
}
ANALYSIS_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {
        "model": ErrorResponse,
        "description": "The file or a form field is too large; or the LLM analysis did not finish within the"
        " synchronous budget (resubmit the request as a job).",
    },
    502: {"model": ErrorResponse, "description": "The LLM backend failed, or its answer never met the json_schema."},
}
LIST_FIELDS = {
    "timestamp_granularities[]": "timestamp_granularities[]",
    "timestamp_granularities": "timestamp_granularities[]",
}
FORM_FIELDS = frozenset(
    {field.alias or name for name, field in TranscriptionForm.model_fields.items()}
    | set(LIST_FIELDS)
    | openai_field_names()
)
TRANSLATION_FIELDS = frozenset(field.alias or name for name, field in TranslationForm.model_fields.items())
OFF_VALUES = frozenset({"false", "0", "none", "null"})
"""A field this service does not know, given one of these values, asks for nothing: it is let through."""


def unsupported_fields(error: ValidationError) -> list[str]:
    return [str(issue["loc"][0]) for issue in error.errors() if issue["type"] == "extra_forbidden"]


def check_model(model: str, config: AppConfig) -> None:
    if model not in config.model_ids:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"unknown model {model[:64]!r}: this service offers {', '.join(config.model_ids)} (GET /v1/models)",
        )


async def receive_transcription_form(request: Request, spool_path: Path, max_file_bytes: int) -> TranscriptionForm:
    """Stream the form in (the file to `spool_path`) and validate it; on any error the spool file is gone."""
    received = await receive_form(request, spool_path, max_file_bytes)
    try:
        chunking_given, detection = pop_chunking_strategy(received.fields)
        known_speakers = pop_known_speakers(received.fields, spool_path)
        values = form_values(received, FORM_FIELDS, LIST_FIELDS)
        if chunking_given:
            values["chunking_strategy"] = "auto" if detection is None else ServerVadChunking(**detection.model_dump())
        form = validated(
            TranscriptionForm, values, "this service", "see the API reference at /docs for the fields it takes"
        )
        try:
            form = form.with_known_speakers(known_speakers)
        except ValueError as error:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, str(error)) from None
    except BaseException:
        remove_spooled(spool_path)  # the upload and any known speaker's clip
        raise
    return form


async def receive_translation_form(request: Request, spool_path: Path, max_file_bytes: int) -> TranslationForm:
    """Stream OpenAI's translation form in (the file to `spool_path`) and validate it; a transcription-only field
    (diarization, analysis, ...) is a 400 that names it. On any error the spool file is gone."""
    received = await receive_form(request, spool_path, max_file_bytes)
    try:
        values = form_values(received, TRANSLATION_FIELDS, {})
        fields = ", ".join(sorted(TRANSLATION_FIELDS))
        return validated(TranslationForm, values, "/v1/audio/translations", f"a translation takes {fields}")
    except BaseException:
        remove_spooled(spool_path)
        raise


def form_values(received: ReceivedForm, known: frozenset[str], list_fields: dict[str, str]) -> dict[str, object]:
    """The received fields as the form model's values: empty ones left out (as in HTML forms), as are unknown
    ones given only "off" values (they ask for nothing); a list field's values as a list, others' last value."""
    values: dict[str, object] = {}
    for name, given in received.fields.items():
        given = [value for value in given if value != ""]  # an empty field means "not given", as in HTML forms
        if name not in known and all(value.strip().lower() in OFF_VALUES for value in given):
            continue
        if given:
            values[list_fields.get(name, name)] = given if name in list_fields else given[-1]
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


def body_issues(error: ValidationError) -> list[dict[str, Any]]:
    """The form's validation issues as FastAPI reports a body's: located under `body`."""
    return [{**issue, "loc": ("body", *issue["loc"])} for issue in error.errors()]


def charge_details(price: Price, form: TranscriptionForm) -> ChargeDetails:
    """How a request of this form is billed: the key's price, the model id asked for."""
    return ChargeDetails(
        task=form.task.value,
        model=form.model,
        rate_per_min=price.rate_per_min,
        profanity_filter=form.profanity_filter,
        llm_price_per_1k_tokens=price.llm_price_per_1k_tokens,
        emotions_rate_per_min=price.emotions_rate_per_min,
    )
