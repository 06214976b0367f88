"""`/asr`'s `output` formats, as whisper-asr-webservice writes them (its `WriteTXT`, `WriteSRT`, ...): txt one
line per segment, tsv `start\\tend\\ttext` in integer milliseconds under a header, json Whisper's result dict
`{"text", "segments", "language"}`; a diarized segment's text starts with `[speaker_0]: `, as WhisperX (that
project's diarizing engine) writes it. srt and vtt cues are cut from the words by the service's subtitle rules
(`serve_app/rendering/subtitles/`), a diarized cue led by `[speaker_0] ` (srt) or `<v speaker_0>` (vtt)."""

import json
from enum import StrEnum
from typing import Any

from deployments.types import DiarizedTranscript, PipelineResult, Segment, Word
from serve_app.rendering.response_formats import stripped
from serve_app.rendering.subtitles import SubtitleRules, build_cues, srt_document, subtitle_words, vtt_document


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


def subtitles(result: PipelineResult, output: Output) -> str:
    """srt or vtt cues cut from the words by the service's subtitle rules (serve_app/rendering/subtitles/), a
    diarized result's cues one speaker each with the speaker shown."""
    rules = SubtitleRules(show_speakers=isinstance(result, DiarizedTranscript))
    cues = build_cues(subtitle_words(result.words, result.segments), rules)
    return srt_document(cues, rules) if output == Output.srt else vtt_document(cues, rules)


def render_output(result: PipelineResult, output: Output, word_timestamps: bool) -> str:
    segments = cues(result)
    match output:
        case Output.txt:
            return "".join(segment.text.strip() + "\n" for segment in segments)
        case Output.srt | Output.vtt:
            return subtitles(result, output)
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
