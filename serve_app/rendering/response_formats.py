"""Turn a Transcript into the body a client asked for with `response_format` and `timestamp_granularities`.

Those choices are a `RenderSpec`: made with a synchronous request, or stored with a job (as data the jobs do not
read: `JobRequest.render`) so that the job's result is rendered the same way whenever it is polled. Here, not in
one protocol, because a job's poll and callback, a batch's outputs and other protocols' subtitles render alike.
"""

import dataclasses
from enum import StrEnum
from typing import Any, TypeVar

from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field

from deployments.transcriber.languages import language_name
from deployments.transcriber.segmenting import sentence_groups
from deployments.types import DiarizedTranscript, PipelineResult, Transcript, Word
from serve_app.rendering.bodies import (
    DiarizedTranscription,
    LLMResult,
    OpenAIDiarizedTranscription,
    Sentence,
    TranscriptionJson,
    TranscriptionVerboseJson,
    TranslationVerboseJson,
)
from serve_app.rendering.subtitles import SubtitleRules, build_cues, srt_document, subtitle_words, vtt_document


# The shape the edge renders a transcript in (OpenAI's `response_format`).
class ResponseFormat(StrEnum):
    json = "json"
    text = "text"
    srt = "srt"
    verbose_json = "verbose_json"
    vtt = "vtt"
    diarized_json = "diarized_json"


# What verbose_json times besides the text (OpenAI's `timestamp_granularities[]`, plus sentences).
class TimestampGranularity(StrEnum):
    segment = "segment"
    word = "word"
    sentence = "sentence"


class RenderSpec(BaseModel):
    """How the edge renders a result for the client who asked: chosen with the request, and stored with a
    job so that the job's result is rendered the same way whenever it is polled."""

    response_format: ResponseFormat = ResponseFormat.json
    timestamp_granularities: list[TimestampGranularity] = Field(
        default_factory=lambda: [TimestampGranularity.segment], description="As the client gave them."
    )
    subtitles: SubtitleRules = Field(
        default_factory=SubtitleRules, description="How srt and vtt cues are cut (defaults for jobs stored before)."
    )

    def stored(self) -> dict[str, Any]:
        """As a job stores it (`JobRequest.render`): JSON data, read back with `RenderSpec.model_validate`."""
        return self.model_dump(mode="json")


WordT = TypeVar("WordT", bound=Word)


SUBTITLE_FORMATS = frozenset({ResponseFormat.srt, ResponseFormat.vtt})


def subtitles(transcript: PipelineResult, response_format: ResponseFormat, rules: SubtitleRules) -> str:
    """srt or vtt cues cut from the transcript's words by `rules` (serve_app/rendering/subtitles/)."""
    roles = transcript.analysis.roles if isinstance(transcript, DiarizedTranscript) and transcript.analysis else {}
    words = [
        dataclasses.replace(word, speaker=roles.get(word.speaker, word.speaker)) if word.speaker else word
        for word in subtitle_words(transcript.words, transcript.segments)
    ]  # a speaker shown as its role, where `roles` gave them
    cues = build_cues(words, rules)
    return srt_document(cues, rules) if response_format == ResponseFormat.srt else vtt_document(cues, rules)


def stripped(words: list[WordT]) -> list[WordT]:
    """Words as clients get them: without the space Whisper's tokens lead with."""
    return [word.model_copy(update={"word": word.word.strip()}) for word in words]


def sentences(words: list[Word], language: str) -> list[Sentence]:
    """`timestamp_granularities[]=sentence`: the transcript's words grouped into sentences, timed by their words
    (the grouping is `deployments.transcriber.segmenting`'s, the one that also cuts aligned words into segments)."""
    return [
        Sentence(start=group[0].start, end=group[-1].end, text="".join(word.word for word in group).strip())
        for group in sentence_groups(words, language)
    ]


def verbose_json(transcript: Transcript, granularities: list[TimestampGranularity]) -> TranscriptionVerboseJson:
    by_sentence = TimestampGranularity.sentence in granularities
    with_words = by_sentence or TimestampGranularity.word in granularities
    return TranscriptionVerboseJson(
        language=language_name(transcript.language),
        duration=round(transcript.duration, 3),
        text=transcript.text,
        segments=None if by_sentence else transcript.segments,
        sentences=sentences(transcript.words, transcript.language) if by_sentence else None,
        words=stripped(transcript.words) if with_words else None,
    )


def render_body(
    transcript: PipelineResult,
    response_format: ResponseFormat,
    granularities: list[TimestampGranularity],
    rules: SubtitleRules | None = None,
) -> dict[str, Any] | str:
    """The body for `response_format`: a JSON object for the JSON formats, a string for the others.
    A diarized transcript is always its JSON object (with roles and emotions where its analysis has them), in
    OpenAI's diarized_json shape when that was asked for;
    with an LLM's answer, `{"transcription": <that body>, "llm_output": <the answer>}` (the edge asked for
    verbose_json then)."""
    if transcript.analysis is not None and transcript.analysis.llm_output is not None:
        if isinstance(transcript, DiarizedTranscript):
            body = DiarizedTranscription.of(transcript, stripped(transcript.words)).body(verbose=True)
        else:
            body = verbose_json(transcript, granularities).model_dump(exclude_none=True)
        return LLMResult(transcription=body, llm_output=transcript.analysis.llm_output).model_dump()
    return _transcription_body(transcript, response_format, granularities, rules or SubtitleRules())


def _transcription_body(
    transcript: PipelineResult,
    response_format: ResponseFormat,
    granularities: list[TimestampGranularity],
    rules: SubtitleRules,
) -> dict[str, Any] | str:
    if response_format in SUBTITLE_FORMATS and (rules.show_speakers or not isinstance(transcript, DiarizedTranscript)):
        return subtitles(transcript, response_format, rules)
    if isinstance(transcript, DiarizedTranscript):
        transcription = DiarizedTranscription.of(transcript, stripped(transcript.words))
        if response_format == ResponseFormat.diarized_json:
            return OpenAIDiarizedTranscription.of(transcription).body()
        return transcription.body()
    match response_format:
        case ResponseFormat.json:
            return TranscriptionJson(text=transcript.text).model_dump()
        case ResponseFormat.verbose_json | ResponseFormat.diarized_json:  # diarized_json always has speakers
            return verbose_json(transcript, granularities).model_dump(exclude_none=True)
        case _:  # text (srt and vtt are subtitles, above)
            return transcript.text


def render(
    transcript: PipelineResult,
    response_format: ResponseFormat,
    granularities: list[TimestampGranularity],
    rules: SubtitleRules | None = None,
) -> Response:
    """The HTTP response for one transcript, with the media type each format calls for."""
    return as_response(render_body(transcript, response_format, granularities, rules), response_format)


def render_translation(
    translation: Transcript, response_format: ResponseFormat, rules: SubtitleRules | None = None
) -> Response:
    """The HTTP response for a translation (a transcript decoded with task=translate): as a transcript's,
    but verbose_json is OpenAI's translation shape (task translate, language english)."""
    if response_format == ResponseFormat.verbose_json:
        body: dict[str, Any] | str = TranslationVerboseJson(
            duration=round(translation.duration, 3), text=translation.text, segments=translation.segments
        ).model_dump(exclude_none=True)
    else:
        body = _transcription_body(
            translation, response_format, [TimestampGranularity.segment], rules or SubtitleRules()
        )
    return as_response(body, response_format)


def as_response(body: dict[str, Any] | str, response_format: ResponseFormat) -> Response:
    """A rendered body with the media type its format calls for."""
    if isinstance(body, dict):
        return JSONResponse(body)
    if response_format == ResponseFormat.vtt:
        return Response(body, media_type="text/vtt")
    return PlainTextResponse(body)
