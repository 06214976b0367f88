"""The form's analysis fields (`prompt`, `json_schema`, `roles`, `emotions`): every combination the nexara SDK
refuses client-side is a 400 here too, with a `detail` that says what to fix, so a raw request (curl) never
gets a 200 that quietly did something else. What passes becomes the Analyzer's `AnalysisOptions`.

`prompt` means what `analysis.prompt_field` says: `llm` (the nexara API: an instruction the LLM answers; the
response is then verbose_json wrapped as `{"transcription": ..., "llm_output": ...}`) or `whisper` (OpenAI's
initial prompt for the decoder).
"""

import json
from typing import Any

import jsonschema
from fastapi import HTTPException, status

from deployments.config import AnalysisConfig
from deployments.types import AnalysisOptions
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity
from serve_app.rest.schemas.transcription_form import Task, TranscriptionForm

MAX_ROLES = 10
MAX_ROLE_NAME_CHARS = 64
MAX_ROLE_DESCRIPTION_CHARS = 500
EMOTION_MODEL = "nexara-ru"
EMOTION_FORMATS = (ResponseFormat.json, ResponseFormat.verbose_json, ResponseFormat.diarized_json)


def refuse(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, detail)


def analysis_options(form: TranscriptionForm, config: AnalysisConfig, synchronous: bool) -> AnalysisOptions | None:
    """What the Analyzer should do; None when nothing. Raises a 400 HTTPException. With an LLM prompt the form
    is transcribed and rendered as verbose_json by segment, without a Whisper prompt (`TranscriptionForm.asks_llm`)."""
    llm_prompt = form.prompt if config.prompt_field == "llm" else None
    if form.json_schema is not None and llm_prompt is None:
        if form.prompt is not None:  # prompt_field: whisper
            raise refuse(
                "json_schema needs an LLM prompt, but this service reads `prompt` as Whisper's initial prompt"
                " (setting analysis.prompt_field: whisper); remove json_schema"
            )
        raise refuse("json_schema requires prompt: the instruction the LLM answers with JSON valid against it")
    schema = None
    if llm_prompt is not None:
        if not llm_prompt.strip():
            raise refuse("prompt is empty: give the instruction the LLM should answer over the transcript")
        if "response_format" in form.model_fields_set and form.response_format != ResponseFormat.verbose_json:
            raise refuse(
                f"prompt cannot be combined with response_format={form.response_format}: the answer comes with the"
                " transcription as verbose_json; remove response_format or set it to verbose_json"
            )
        if "timestamp_granularities" in form.model_fields_set and form.timestamp_granularities != [
            TimestampGranularity.segment
        ]:
            raise refuse(
                "prompt cannot be combined with timestamp_granularities[] other than segment: the transcription"
                " comes as verbose_json by segment; remove timestamp_granularities[]"
            )
        schema = parse_json_schema(form.json_schema) if form.json_schema is not None else None
    roles = None
    if form.roles is not None:
        if form.task != Task.diarize:
            raise refuse("roles requires task=diarize: roles are given to the speakers diarization finds")
        roles = parse_roles(form.roles)
    if form.emotions:
        if form.task != Task.diarize:
            raise refuse("emotions=true requires task=diarize")
        if form.model != EMOTION_MODEL:
            raise refuse(f"emotions=true requires model={EMOTION_MODEL}; got model={form.model[:64]}")
        if form.response_format not in EMOTION_FORMATS:
            raise refuse(
                f"emotions=true requires response_format json, verbose_json or diarized_json: {form.response_format}"
                " has no segments to carry them"
            )
    if llm_prompt is None and roles is None and not form.emotions:
        return None
    if form.stream:
        raise refuse(
            "stream=true cannot be combined with prompt, roles or emotions: the analysis needs the whole"
            " transcript; remove stream"
        )
    options = AnalysisOptions(
        prompt=llm_prompt,
        json_schema=schema,
        roles=roles,
        emotions=form.emotions,
        timeout_s=config.sync_timeout_s if synchronous else None,
    )
    return options


def parse_json_schema(text: str) -> dict[str, Any]:
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise refuse(f"json_schema is not valid JSON: {error.msg} at character {error.pos}") from None
    if not isinstance(schema, dict):
        raise refuse("json_schema must be a JSON object (a JSON Schema)")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise refuse(f"json_schema is not a valid JSON Schema (draft 2020-12): {error.message[:300]}") from None
    return schema


def parse_roles(text: str) -> str | list[str] | dict[str, str]:
    """`auto`, a JSON list of role names, or a JSON object of name -> description, within the nexara limits."""
    if text.strip() == "auto":
        return "auto"
    try:
        roles = json.loads(text, object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, ValueError) as error:
        problem = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        raise refuse(
            f'roles must be "auto", a JSON list of role names or a JSON object of name -> description ({problem})'
        ) from None
    if not isinstance(roles, list | dict):
        raise refuse('roles must be "auto", a JSON list of role names or a JSON object of name -> description')
    if not roles:
        raise refuse('roles is empty: give "auto", or at least one role')
    if len(roles) > MAX_ROLES:
        raise refuse(f"roles takes at most {MAX_ROLES} roles; got {len(roles)}")
    names = list(roles)
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise refuse("every role name must be a non-empty string")
        if len(name) > MAX_ROLE_NAME_CHARS:
            raise refuse(f"role name {name[:64]!r}... is longer than {MAX_ROLE_NAME_CHARS} characters")
    if len(set(names)) != len(names):
        raise refuse("roles must not repeat a name")
    if isinstance(roles, dict):
        for name, description in roles.items():
            if not isinstance(description, str) or not description.strip():
                raise refuse(f"the description of role {name!r} must be a non-empty string")
            if len(description) > MAX_ROLE_DESCRIPTION_CHARS:
                raise refuse(f"the description of role {name!r} is longer than {MAX_ROLE_DESCRIPTION_CHARS} characters")
    return roles


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a role name is repeated")
    return dict(pairs)
