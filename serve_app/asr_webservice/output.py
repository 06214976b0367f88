"""`/asr`'s `output` formats, as whisper-asr-webservice writes them (its `WriteTXT`, `WriteSRT`, ...): txt one
line per segment, srt and vtt cues, tsv `start\\tend\\ttext` in integer milliseconds under a header, json
Whisper's result dict `{"text", "segments", "language"}`. A diarized segment's text starts with
`[speaker_0]: `, as WhisperX (that project's diarizing engine) writes it."""

import json
from enum import StrEnum
from typing import Any

from deployments.types import DiarizedTranscript, PipelineResult, Segment, Word
from serve_app.rest.rendering import render_srt, render_vtt, stripped


class Output(StrEnum):
    txt = "txt"
    vtt = "vtt"
    srt = "srt"
    tsv = "tsv"
    json = "json"


def cues(result: PipelineResult) -> list[Segment]:
    """The result's segments as timed text; a diarized segment's text led by its speaker."""
    if not isinstance(result, DiarizedTranscript):
        return result.segments
    undecoded = {"seek": 0, "tokens": [], "temperature": 0, "avg_logprob": 0, "compression_ratio": 0}
    return [
        Segment.model_validate(
            {
                **undecoded,
                "no_speech_prob": 0,
                **segment.model_dump(include={"id", "start", "end"}),
                "text": f"[{segment.speaker}]: {segment.text.strip()}",
            }
        )
        for segment in result.segments
    ]


def render_output(result: PipelineResult, output: Output, word_timestamps: bool) -> str:
    segments = cues(result)
    match output:
        case Output.txt:
            return "".join(segment.text.strip() + "\n" for segment in segments)
        case Output.srt:
            return render_srt(segments)
        case Output.vtt:
            return render_vtt(segments)
        case Output.tsv:
            rows = [f"{round(s.start * 1000)}\t{round(s.end * 1000)}\t{s.text.strip().replace(chr(9), ' ')}\n"
                    for s in segments]  # fmt: skip
            return "start\tend\ttext\n" + "".join(rows)
        case Output.json:
            return json.dumps(whisper_result(result, word_timestamps), ensure_ascii=False)


def whisper_result(result: PipelineResult, word_timestamps: bool) -> dict[str, Any]:
    """Whisper's `transcribe()` dict: its segments with `id, seek, start, end, text` and the decoding's values
    (a diarized segment: `speaker` instead), `words` with `word_timestamps`."""
    segments: list[dict[str, Any]] = []
    if isinstance(result, DiarizedTranscript):
        for diarized in result.segments:
            body = diarized.model_dump(exclude={"words", "decoding"})
            if word_timestamps:
                body["words"] = [_word(word) for word in stripped(diarized.words)]
            segments.append(body)
    else:
        for segment in result.segments:
            body = segment.model_dump(exclude={"language"})
            if word_timestamps:
                body["words"] = [_word(word) for word in stripped(_within(result.words, segment))]
            segments.append(body)
    return {"text": result.text, "segments": segments, "language": result.language}


def _within(words: list[Word], segment: Segment) -> list[Word]:
    return [word for word in words if segment.start <= (word.start + word.end) / 2 <= segment.end]


def _word(word: Word) -> dict[str, Any]:
    body: dict[str, Any] = {"word": word.word, "start": word.start, "end": word.end, "probability": word.prob}
    if speaker := getattr(word, "speaker", None):
        body["speaker"] = speaker
    return body
