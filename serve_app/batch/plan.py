"""The batch's options and a manifest's per-row choices read as the transcription form reads them: the same
refusals (by name) and the same engine options for the same formats, so a batch's transcript is the service's."""

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import HTTPException
from pydantic import ValidationError

from deployments.batch.inputs import Listed
from deployments.batch.tasks import FileTask
from deployments.config import VocabularyConfig
from deployments.vocabulary import Vocabulary
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity
from serve_app.rest.schemas.transcription_form import TranscriptionForm
from serve_app.rest.vocabulary_fields import vocabulary as form_vocabulary

FORMATS = ("json", "verbose_json", "srt", "vtt", "text")
EXTENSIONS = {"json": "json", "verbose_json": "verbose.json", "srt": "srt", "vtt": "vtt", "text": "txt"}
SOURCE = "https://batch.invalid/"  # the form wants one source; a batch's is the task's, never this


class PlanError(ValueError):
    """Options the batch cannot honour: the run is refused before any work, naming them."""


def plan(
    listed: Iterable[Listed], formats: list[str], task: str, language: str | None, word_timestamps: bool
) -> list[FileTask]:
    """Each input as a task: its options from the forms of every asked format (one transcription serves them
    all: word and segment times when any format needs them, which changes no text)."""
    return list(plan_each(listed, formats, task, language, word_timestamps))


def plan_each(
    listed: Iterable[Listed],
    formats: list[str],
    task: str,
    language: str | None,
    word_timestamps: bool,
    vocabulary: Vocabulary | None = None,
) -> Iterator[FileTask]:
    """`plan`, one input at a time (a listing of 100,000 inputs is never a list of tasks); every input with the
    run's vocabulary."""
    for item in listed:
        planned = _task(item, formats, task, language, word_timestamps)
        if vocabulary is not None:
            planned = planned.model_copy(
                update={"options": planned.options.model_copy(update={"vocabulary": vocabulary})}
            )
        yield planned


def batch_vocabulary(hotwords: list[str], dictionary: str | None, config: VocabularyConfig) -> Vocabulary | None:
    """`--hotwords` and `--dictionary` read as the form's fields are: the same limits and refusals, by name."""
    try:
        form = TranscriptionForm.model_validate({"url": SOURCE, "hotwords": hotwords, "dictionary": dictionary})
        return form_vocabulary(form, config)
    except ValidationError as error:
        raise PlanError("; ".join(f"--{e['loc'][0]}: {e['msg']}" for e in error.errors())) from None
    except HTTPException as refused:
        raise PlanError(f"--{refused.detail}") from None


def _task(item: Listed, formats: list[str], task: str, language: str | None, word_timestamps: bool) -> FileTask:
    row = {"task": task, "language": language} | item.overrides
    forms = [_form(row, response_format, word_timestamps, item) for response_format in formats]
    options = forms[0].transcription_options()
    options = options.model_copy(
        update={
            "word_timestamps": any(form.transcription_options().word_timestamps for form in forms),
            "segment_timestamps": any(form.transcription_options().segment_timestamps for form in forms),
        }
    )
    return FileTask(
        source=item.source,
        name=item.name,
        options=options,
        diarization=forms[0].diarization_options(),
        outputs=sorted(f"{item.name}.{EXTENSIONS[response_format]}" for response_format in formats),
        render={"formats": {str(form.response_format): form.render_spec().stored() for form in forms}},
    )


def _form(row: dict[str, Any], response_format: str, word_timestamps: bool, item: Listed) -> TranscriptionForm:
    if row.get("task") not in ("transcribe", "diarize"):
        raise PlanError(f"{item.source}: task {row.get('task')!r} is not supported here: transcribe or diarize")
    fields: dict[str, Any] = {"url": SOURCE, "response_format": response_format, "task": row["task"]}
    if row.get("language") is not None:
        fields["language"] = row["language"]
    if row.get("num_speakers") is not None:
        fields["num_speakers"] = int(row["num_speakers"])
    if word_timestamps and response_format == ResponseFormat.verbose_json:
        fields["timestamp_granularities[]"] = [TimestampGranularity.segment, TimestampGranularity.word]
    try:
        return TranscriptionForm.model_validate(fields)
    except ValidationError as error:
        reasons = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in error.errors())
        raise PlanError(f"{item.source}: {reasons}") from None
