"""A transcript as Deepgram's pre-recorded response: `metadata`, and `results.channels[c].alternatives[0]` (one
channel, or one per channel with `multichannel`) with its words (`word` lower-case and bare, `punctuated_word` as
written when punctuation is asked, `speaker` when diarized), `paragraphs` (asked, or with smart_format, as
Deepgram does) and `results.utterances`. The same body answers a synchronous request and is POSTed to a
callback."""

import bisect
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from deployments.transcriber.segmenting import sentence_groups
from deployments.types import DiarizedTranscript, DiarizedWord, PipelineResult, SpeakerTurn, Word
from serve_app.deepgram._params import ListenOptions

PARAGRAPH_PAUSE_S = 2.0
"""A pause at least this long between sentences starts a new paragraph (as does a new speaker)."""
BARE = re.compile(r"[^\w'-]+")
ARCH = "whisper"


def model_uuid(name: str) -> str:
    """A stable id for a model name, as Deepgram's `models` lists ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"stt-service/deepgram/{name}"))


def bare(word: str) -> str:
    """Deepgram's `word`: lower case, without punctuation."""
    return BARE.sub("", word.strip()).lower() or word.strip().lower()


def speaker_number(label: str) -> int:
    """`speaker_3` -> 3."""
    return int(label.rpartition("_")[2]) if label.rpartition("_")[2].isdigit() else 0


def created_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SpeakerShares:
    """How much of a word's time its speaker's turns cover, of all the speech heard then (`speaker_confidence`:
    1 where only that speaker talks, lower where voices overlap)."""

    def __init__(self, turns: list[SpeakerTurn]) -> None:
        self.turns = sorted(turns, key=lambda turn: turn.start)
        self.starts = [turn.start for turn in self.turns]
        self.longest = max((turn.end - turn.start for turn in self.turns), default=0.0)

    def of(self, word: DiarizedWord) -> float:
        first = bisect.bisect_left(self.starts, word.start - self.longest)
        last = bisect.bisect_left(self.starts, word.end)
        own = total = 0.0
        for turn in self.turns[first:last]:
            overlap = min(turn.end, word.end) - max(turn.start, word.start)
            if overlap > 0:
                total += overlap
                own += overlap if turn.speaker == word.speaker else 0.0
        return round(own / total, 3) if total > 0 else 1.0


def render_listen(
    result: PipelineResult, options: ListenOptions, request_id: str, created: str, sha256: str | None, version: str
) -> dict[str, Any]:
    """The whole response body: one `results.channels[]` entry per channel transcribed (multichannel), and the
    utterances of all of them in time order, each with its channel."""
    channels: list[dict[str, Any]] = []
    spoken: list[dict[str, Any]] = []
    for number, view in enumerate(by_channel(result)):
        channel, words = _channel(view, options)
        channels.append(channel)
        if options.utterances:
            spoken += utterances(words, options, number)
    results: dict[str, Any] = {"channels": channels}
    if options.utterances:
        results["utterances"] = sorted(spoken, key=lambda utterance: (utterance["start"], utterance["channel"]))
    body = metadata(result.duration, options, request_id, created, sha256, version, result.channels)
    return {"metadata": body, "results": results}


def by_channel(result: PipelineResult) -> list[PipelineResult]:
    """The result as each channel's (multichannel), or itself."""
    if result.channels == 1:
        return [result]
    views = []
    for number in range(result.channels):
        segments = [segment for segment in result.segments if segment.channel == number]
        update: dict[str, Any] = {"segments": segments, "words": [w for w in result.words if w.channel == number]}
        if isinstance(result, DiarizedTranscript):
            update["text"] = " ".join(segment.text for segment in segments).strip()
        views.append(result.model_copy(update=update))
    return views


def _channel(result: PipelineResult, options: ListenOptions) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One `results.channels[]` entry, and its rendered words."""
    words = [_word(word, options) for word in result.words]
    if isinstance(result, DiarizedTranscript):
        shares = SpeakerShares(result.turns)
        for rendered, word in zip(words, result.words, strict=True):
            rendered["speaker_confidence"] = shares.of(word)
    alternative: dict[str, Any] = {
        "transcript": _transcript(result, words, options),
        "confidence": _confidence(words),
        "words": words,
    }
    if options.with_paragraphs:
        alternative["paragraphs"] = paragraphs(result, options)
    channel: dict[str, Any] = {"alternatives": [alternative]}
    if options.detect_language:
        channel["detected_language"] = result.language
    return channel, words


def metadata(
    duration: float,
    options: ListenOptions,
    request_id: str,
    created: str,
    sha256: str | None,
    version: str,
    channels: int = 1,
) -> dict[str, Any]:
    model_id = model_uuid(options.model)
    body: dict[str, Any] = {
        "transaction_key": "deprecated",
        "request_id": request_id,
        "created": created,
        "duration": round(duration, 3),
        "channels": channels,
        "models": [model_id],
        "model_info": {model_id: {"name": options.model, "version": version, "arch": ARCH}},
    }
    if sha256 is not None:
        body["sha256"] = sha256
    if options.tags:
        body["tags"] = options.tags
    if options.extra:
        body["extra"] = options.extra
    return body


def _word(word: Word, options: ListenOptions) -> dict[str, Any]:
    rendered: dict[str, Any] = {
        "word": bare(word.word),
        "start": round(word.start, 3),
        "end": round(max(word.end, word.start), 3),
        "confidence": round(word.prob, 4) if word.prob is not None else 1.0,
    }
    if options.punctuated:
        rendered["punctuated_word"] = word.word.strip()
    if isinstance(word, DiarizedWord):
        rendered["speaker"] = speaker_number(word.speaker)
    return rendered


def _text(words: list[dict[str, Any]], options: ListenOptions) -> str:
    return " ".join(word["punctuated_word" if options.punctuated else "word"] for word in words)


def _transcript(result: PipelineResult, words: list[dict[str, Any]], options: ListenOptions) -> str:
    return result.text if options.punctuated else _text(words, options)


def _confidence(words: list[dict[str, Any]]) -> float:
    return round(fmean(word["confidence"] for word in words), 4) if words else 0.0


def utterances(words: list[dict[str, Any]], options: ListenOptions, channel: int = 0) -> list[dict[str, Any]]:
    """Words cut at every pause of `utt_split` or more, and at every change of speaker."""
    groups: list[list[dict[str, Any]]] = []
    for word in words:
        previous = groups[-1][-1] if groups else None
        if (
            previous is None
            or word["start"] - previous["end"] >= options.utt_split
            or word.get("speaker") != previous.get("speaker")
        ):
            groups.append([])
        groups[-1].append(word)
    rendered = []
    for group in groups:
        utterance: dict[str, Any] = {
            "start": group[0]["start"],
            "end": group[-1]["end"],
            "confidence": _confidence(group),
            "channel": channel,
            "transcript": _text(group, options),
            "words": group,
            "id": str(uuid.uuid4()),
        }
        if "speaker" in group[0]:
            utterance["speaker"] = group[0]["speaker"]
        rendered.append(utterance)
    return rendered


def paragraphs(result: PipelineResult, options: ListenOptions) -> dict[str, Any]:
    """Sentences (the service's own sentence splitting) gathered into paragraphs: a new one at a new speaker
    or after a long pause."""
    speaker_of = (lambda word: word.speaker) if isinstance(result, DiarizedTranscript) else (lambda word: None)
    groups: list[list[list[Word]]] = []
    for sentence in _sentences(result.words, result.language, speaker_of):
        last = groups[-1][-1] if groups else None
        if (
            last is None
            or speaker_of(sentence[0]) != speaker_of(last[-1])
            or sentence[0].start - last[-1].end >= PARAGRAPH_PAUSE_S
        ):
            groups.append([])
        groups[-1].append(sentence)
    rendered, texts = [], []
    for group in groups:
        paragraph: dict[str, Any] = {
            "sentences": [
                {
                    "text": "".join(word.word for word in sentence).strip(),
                    "start": round(sentence[0].start, 3),
                    "end": round(sentence[-1].end, 3),
                }
                for sentence in group
            ],
            "num_words": sum(len(sentence) for sentence in group),
            "start": round(group[0][0].start, 3),
            "end": round(group[-1][-1].end, 3),
        }
        text = " ".join(sentence["text"] for sentence in paragraph["sentences"])
        if (speaker := speaker_of(group[0][0])) is not None:
            paragraph["speaker"] = speaker_number(speaker)
            text = f"Speaker {paragraph['speaker']}: {text}"
        rendered.append(paragraph)
        texts.append(text)
    return {"transcript": "\n" + "\n\n".join(texts) + ("\n" if texts else ""), "paragraphs": rendered}


def _sentences(words: Sequence[Word], language: str, speaker_of: Any) -> list[list[Word]]:
    """Sentences, cut again where the speaker changes inside one."""
    cut: list[list[Word]] = []
    for sentence in sentence_groups(list(words), language):
        cut.append([sentence[0]])
        for word in sentence[1:]:
            if speaker_of(word) != speaker_of(cut[-1][-1]):
                cut.append([])
            cut[-1].append(word)
    return cut
