"""A job rendered as AssemblyAI's transcript and its exports: times in milliseconds, speakers as letters (A, B,
...), sentences and paragraphs from the words, captions, word search, the list's items."""

import math
import re
import string
from collections.abc import Iterable, Sequence
from typing import Any

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job, JobStatus
from deployments.transcriber.segmenting import sentence_groups
from deployments.types import DiarizedTranscript, PipelineResult, Segment, Word
from serve_app.assemblyai.translation import Stored
from serve_app.rendering.subtitles import CueWord, SubtitleRules, build_cues, srt_document, vtt_document

PARAGRAPH_PAUSE_S = 2.0
"""A pause at least this long between sentences starts a paragraph (so does a change of speaker)."""
PARAGRAPH_MAX_S = 60.0
_MARKS = string.punctuation.replace("'", "") + "¿¡…«»“”„"
PUNCTUATION = re.compile(f"[{re.escape(_MARKS)}]+")
"""What `punctuate: false` takes out of words (an apostrophe inside a word stays: didn't)."""


def status_of(job: Job) -> str:
    if job.status == JobStatus.complete:
        return "completed"
    if job.status == JobStatus.error:
        return "error"
    return "processing" if job.progress > 0 else "queued"


def transcript_object(job: Job, stored: Stored, callback: CallbackState | None) -> dict[str, Any]:
    """`GET /v2/transcript/{id}`: the request's fields echoed, and once completed the transcript."""
    body: dict[str, Any] = {
        **stored.echo,
        "id": job.job_id,
        "status": status_of(job),
        "audio_url": stored.audio_url,
        "language_code": stored.language_code,
        "punctuate": stored.punctuate,
        "format_text": True,
        "speaker_labels": stored.speaker_labels,
        "speech_model_used": stored.model,
        "webhook_auth": stored.webhook_header is not None,
        "webhook_status_code": callback.last_status if callback is not None else None,
        "text": None,
        "words": None,
        "utterances": None,
        "confidence": None,
        "audio_duration": None,
        "error": job.error,
    }
    result = job.transcript
    if result is None:
        return body
    words = timed_words(result, stored)
    body |= {
        "language_code": stored.language_code or result.language,
        "text": text_of(words, result, stored),
        "words": words,
        "confidence": mean_confidence(words),
        "audio_duration": math.ceil(result.duration),
        "utterances": utterances(result, stored) if stored.speaker_labels or stored.multichannel else None,
    }
    if stored.multichannel:
        body["audio_channels"] = result.channels
    return body


def deleted_object(job: Job, stored: Stored) -> dict[str, Any]:
    """What `DELETE` answers: the transcript with its content gone, as AssemblyAI's deleted ones read."""
    return {
        **stored.echo,
        "id": job.job_id,
        "status": status_of(job),
        "audio_url": "http://deleted_by_user",
        "text": "Deleted by user.",
        "words": None,
        "utterances": None,
        "webhook_auth": stored.webhook_header is not None,
    }


def list_item(job: Job, stored: Stored, resource_url: str) -> dict[str, Any]:
    return {
        "id": job.job_id,
        "resource_url": resource_url,
        "status": status_of(job),
        "created": job.created_at.isoformat(),
        "completed": job.completed_at.isoformat() if job.completed_at is not None else None,
        "audio_url": stored.audio_url,
        "error": job.error,
    }


# ---- words ----


def speaker_letters(result: PipelineResult) -> dict[str, str]:
    """speaker_0, speaker_1, ... as A, B, ... (AA, AB, ... past Z), in order of first appearance; a channel that
    is a speaker (multichannel) as its channel's number, 1, 2, ..., as AssemblyAI labels them."""
    if not isinstance(result, DiarizedTranscript):
        return {}
    return {
        summary.speaker: str(summary.channel + 1)
        if summary.channel is not None and summary.speaker == f"channel_{summary.channel}"
        else _letters(index)
        for index, summary in enumerate(result.speakers)
    }


def _letters(index: int) -> str:
    return chr(65 + index) if index < 26 else _letters(index // 26 - 1) + chr(65 + index % 26)


def word_text(word: Word, punctuate: bool) -> str:
    text = word.word.strip()
    return text if punctuate else PUNCTUATION.sub("", text)


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def _word(word: Word, punctuate: bool, letters: dict[str, str]) -> dict[str, Any]:
    start = ms(word.start)
    speaker = getattr(word, "speaker", None)
    return {
        "text": word_text(word, punctuate),
        "start": start,
        "end": max(ms(word.end), start + 1),
        "confidence": round(word.prob, 4) if word.prob is not None else 1.0,
        "speaker": letters.get(speaker) if speaker is not None else None,
        **({} if word.channel is None else {"channel": str(word.channel + 1)}),
    }


def _words(words: Iterable[Word], stored: Stored, letters: dict[str, str]) -> list[dict[str, Any]]:
    rendered = (_word(word, stored.punctuate, letters) for word in words)
    return [word for word in rendered if word["text"]]


def timed_words(result: PipelineResult, stored: Stored) -> list[dict[str, Any]]:
    return _words(result.words, stored, speaker_letters(result))


def text_of(words: list[dict[str, Any]], result: PipelineResult, stored: Stored) -> str:
    return result.text if stored.punctuate else " ".join(word["text"] for word in words)


def mean_confidence(words: Sequence[dict[str, Any]]) -> float:
    return round(sum(word["confidence"] for word in words) / len(words), 4) if words else 0.0


def _span(words: list[dict[str, Any]], text: str, speaker: str | None) -> dict[str, Any]:
    span = {
        "text": text,
        "start": words[0]["start"],
        "end": words[-1]["end"],
        "confidence": mean_confidence(words),
        "speaker": speaker,
        "words": words,
    }
    if "channel" in words[0]:
        span["channel"] = words[0]["channel"]
    return span


def utterances(result: PipelineResult, stored: Stored) -> list[dict[str, Any]]:
    """Each speaker's stretch of speech, with its words."""
    if not isinstance(result, DiarizedTranscript):
        return []
    letters = speaker_letters(result)
    spans = []
    for segment in result.segments:
        words = _words(segment.words, stored, letters)
        if words:
            text = segment.text.strip() if stored.punctuate else " ".join(word["text"] for word in words)
            spans.append(_span(words, text, letters.get(segment.speaker)))
    return spans


# ---- sentences, paragraphs, captions ----


def sentences(result: PipelineResult, stored: Stored) -> list[dict[str, Any]]:
    """The words grouped into sentences; a sentence's speaker is its first word's."""
    letters = speaker_letters(result)
    spans = []
    for group in sentence_groups(list(result.words), result.language):
        words = _words(group, stored, letters)
        if words:
            spans.append(_span(words, " ".join(word["text"] for word in words), words[0]["speaker"]))
    return spans


def paragraphs(result: PipelineResult, stored: Stored) -> list[dict[str, Any]]:
    """Sentences joined until a pause of PARAGRAPH_PAUSE_S, a change of speaker, or PARAGRAPH_MAX_S."""
    groups: list[list[dict[str, Any]]] = []
    for sentence in sentences(result, stored):
        last = groups[-1] if groups else None
        if (
            last is None
            or sentence["start"] - last[-1]["end"] >= PARAGRAPH_PAUSE_S * 1000
            or sentence["speaker"] != last[-1]["speaker"]
            or sentence["end"] - last[0]["start"] > PARAGRAPH_MAX_S * 1000
        ):
            groups.append([sentence])
        else:
            last.append(sentence)
    return [
        _span(
            [word for sentence in group for word in sentence["words"]],
            " ".join(sentence["text"] for sentence in group),
            group[0]["speaker"],
        )
        for group in groups
    ]


def plain_segment(index: int, start: float, end: float, text: str) -> Segment:
    """A segment of text and times only (a caption, a line of text for the LLM)."""
    return Segment(id=index, seek=0, start=start, end=end, text=text, tokens=[], temperature=0.0,
                   avg_logprob=0.0, compression_ratio=0.0, no_speech_prob=0.0)  # fmt: skip


def subtitles(result: PipelineResult, stored: Stored, kind: str, chars_per_caption: int | None) -> str:
    """srt or vtt captions cut from the words by the service's subtitle rules (serve_app/rendering/subtitles/), a
    caption per speaker's turn with speaker_labels; `chars_per_caption` makes a caption one line of at most that
    many characters (a longer word cut)."""
    rules = SubtitleRules()
    if chars_per_caption is not None:
        rules = SubtitleRules(max_line_width=chars_per_caption, max_line_count=1)
    words = [CueWord(w["text"], w["start"] / 1000, w["end"] / 1000, w["speaker"]) for w in timed_words(result, stored)]
    cues = build_cues(words, rules)
    return srt_document(cues, rules) if kind == "srt" else vtt_document(cues, rules)


def _normal(text: str) -> str:
    return PUNCTUATION.sub("", text).lower()


def word_search(result: PipelineResult, terms: list[str]) -> list[dict[str, Any]]:
    """Each term (a word or a phrase of up to five) with where it occurs: word indexes and times (ms)."""
    words = [word for word in result.words if _normal(word.word.strip())]
    spoken = [_normal(word.word.strip()) for word in words]
    matches = []
    for term in terms:
        wanted = _normal(term).split()
        if not wanted:
            continue
        found = [i for i in range(len(spoken) - len(wanted) + 1) if spoken[i : i + len(wanted)] == wanted]
        matches.append(
            {
                "text": term,
                "count": len(found),
                "timestamps": [[ms(words[i].start), ms(words[i + len(wanted) - 1].end)] for i in found],
                "indexes": found,
            }
        )
    return matches
