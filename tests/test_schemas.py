"""What a request form asks of the engine."""

import pytest

from serve_app.rendering.response_formats import ResponseFormat
from serve_app.rest.schemas.transcription_form import Task, TranscriptionForm


@pytest.mark.parametrize(
    ("response_format", "task", "timed"),
    [
        (ResponseFormat.json, Task.transcribe, False),
        (ResponseFormat.text, Task.transcribe, False),
        (ResponseFormat.verbose_json, Task.transcribe, True),
        (ResponseFormat.srt, Task.transcribe, True),
        (ResponseFormat.vtt, Task.transcribe, True),
        (ResponseFormat.json, Task.diarize, True),  # segments are split at speaker changes, by word times
    ],
)
def test_only_formats_with_times_decode_timestamp_tokens(
    response_format: ResponseFormat, task: Task, timed: bool
) -> None:
    form = TranscriptionForm(url="https://example.com/a.wav", response_format=response_format, task=task)
    assert form.transcription_options().segment_timestamps is timed
