"""Deepgram's query parameters for pre-recorded audio (`POST /v1/listen`), read into `ListenOptions`: what the
pipeline is asked for and how its transcript is rendered back. A parameter the service cannot honour is a 400
naming it; an "off" value (`false`, `0`) of one asks for nothing and passes."""

import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from fastapi import HTTPException, status
from pydantic import BaseModel, Field

from deployments.redaction import RedactionClass, RedactionOptions, unserved_classes
from deployments.transcriber.languages import is_whisper_language
from deployments.types import DiarizationOptions, TranscriptionOptions
from deployments.vocabulary import Vocabulary
from serve_app.common.vocabulary import VocabularyRefused, vocabulary_from

TRUE, FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no"})
OFF = FALSE | {"", "none", "null"}
REFUSED = {
    "search": "search is not supported",
    "replace": "find-and-replace is not supported",
    "summarize": "summaries are not supported",
    "topics": "topic detection is not supported",
    "custom_topic": "topic detection is not supported",
    "custom_topic_mode": "topic detection is not supported",
    "intents": "intent recognition is not supported",
    "custom_intent": "intent recognition is not supported",
    "custom_intent_mode": "intent recognition is not supported",
    "sentiment": "sentiment analysis is not supported",
    "detect_entities": "entity detection is not supported",
    "detect_topics": "topic detection is not supported",
    "filler_words": "Whisper leaves filler words out; filler_words=true cannot be honoured",
    "numerals": "numerals conversion is not supported (smart_format's Whisper output already writes numbers)",
    "measurements": "measurement conversion is not supported",
    "dictation": "dictation mode is not supported",
    "language_hint": "language hints are not supported: give `language`, or `detect_language=true`",
    "diarize_version": "diarization versions are not selectable",
    "encoding": "send audio in a container (wav, mp3, flac, ogg, m4a, webm, ...): raw `encoding` is for live streams",
    "sample_rate": "send audio in a container: `sample_rate` is for raw audio",
    "channels": "send audio in a container: `channels` is for raw audio",
}
"""Parameters refused when given a value that asks for something, and why."""
PASSED = {
    "mip_opt_out": "nothing is kept to train on",
    "interim_results": "a live-only parameter",
}
"""Parameters accepted whatever their value, with why they change nothing."""
DEFAULT_UTT_SPLIT_S = 0.8
NUMBERS = (RedactionClass.numbers,)
PII = tuple(cls for cls in RedactionClass if cls != RedactionClass.numbers)
REDACT_GROUPS: dict[str, tuple[RedactionClass, ...]] = {
    "pci": (RedactionClass.credit_card_number,),
    "ssn": (RedactionClass.us_social_security_number,),
    "numbers": NUMBERS,
    "true": NUMBERS,
    "aggressive_numbers": NUMBERS,
    "pii": PII,
    **{cls.value: (cls,) for cls in RedactionClass},
}
"""Deepgram's `redact` values as entity classes: its groups (`numbers` and `true` alike), and this service's class
names (`person_name`, `email_address`, ...) as single entities."""


def redact_classes(values: list[str], language: str | None) -> list[RedactionClass]:
    """`redact` (repeated, or comma-separated) as classes; a 400 naming a value that is not one, `phi` (medical
    entities are not detected), or a named-entity class outside English."""
    classes: dict[RedactionClass, None] = {}
    for value in (v.strip().lower() for given in values for v in given.split(",")):
        if value in ("false", ""):
            continue
        if value == "phi":
            raise bad_request("redact: phi is not supported (medical entities are not detected): use pci, ssn,"
                              " numbers, pii or entity names")  # fmt: skip
        if value not in REDACT_GROUPS:
            raise bad_request(f"redact: {value[:32]!r} is not supported: use pci, ssn, numbers, pii or one of"
                              f" {', '.join(cls.value for cls in RedactionClass)}")  # fmt: skip
        classes.update(dict.fromkeys(REDACT_GROUPS[value]))
    if unserved := unserved_classes(list(classes), language):
        named = ", ".join(cls.value for cls in unserved)
        raise bad_request(f"redact: {named} can be found in English only, and language is {language!r}")
    return list(classes)


def flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise bad_request(f"{name} must be true or false; got {value[:32]!r}")


def bad_request(message: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, message)


def whisper_language(value: str) -> str | None:
    """Deepgram's BCP-47 tag as Whisper's code (`en-US` -> `en`); `multi`: detected."""
    code = value.strip().lower().replace("_", "-").split("-")[0]
    if code == "multi":
        return None
    if not is_whisper_language(code):
        raise bad_request(f"language {value[:16]!r} is not supported: use a code such as 'en' or 'fr-FR'")
    return code


class ListenOptions(BaseModel):
    """One request's parameters, as the pipeline and the renderer need them (stored in a callback job's render
    dict, so that the callback renders what the request asked)."""

    model: str
    language: str | None = "en"
    detect_language: bool = False
    punctuate: bool = False
    smart_format: bool = False
    diarize: bool = False
    multichannel: bool = Field(False, description="Each channel transcribed on its own; billed per channel.")
    utterances: bool = False
    utt_split: float = Field(DEFAULT_UTT_SPLIT_S, gt=0)
    paragraphs: bool = False
    profanity_filter: bool = False
    callback: str | None = None
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, str] = Field(default_factory=dict)
    vocabulary: Vocabulary | None = None
    redact: list[RedactionClass] = Field(default_factory=list, description="Entities hidden, as `[CLASS]`.")

    @property
    def punctuated(self) -> bool:
        return self.punctuate or self.smart_format

    @property
    def with_paragraphs(self) -> bool:
        return self.paragraphs or self.smart_format

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language,
            word_timestamps=True,
            profanity_filter=self.profanity_filter,
            vocabulary=self.vocabulary,
            multichannel=self.multichannel,
            redaction=RedactionOptions(classes=self.redact) if self.redact else None,
        )

    def diarization_options(self) -> DiarizationOptions | None:
        """With `multichannel`, Deepgram's diarize tells speakers apart within each channel."""
        return DiarizationOptions(within_channels=self.multichannel) if self.diarize else None


def asked(
    query: Iterable[tuple[str, str]], refused: Mapping[str, str], passed: Collection[str]
) -> dict[str, list[str]]:
    """The parameters that may ask for something, by name, with every value given; a 400 for a refused one
    that does. Those accepted without effect, and refused ones that ask for nothing, are left out."""
    given: dict[str, list[str]] = {}
    for name, value in query:
        given.setdefault(name, []).append(value)
    kept = {}
    for name, values in given.items():
        if name in passed or (name in refused and asks_nothing(values)):
            continue
        if name in refused:
            raise bad_request(f"{name}: {refused[name]}")
        kept[name] = values
    return kept


def asks_nothing(values: list[str]) -> bool:
    return all(value.strip().lower() in OFF for value in values)


def offered_model(name: str, models: list[str]) -> str:
    if name not in models:
        raise bad_request(f"model {name[:64]!r} is not offered here: use one of {', '.join(models)}")
    return name


def listen_options(query: Iterable[tuple[str, str]], models: list[str]) -> ListenOptions:
    """The request's options from its query string, or a 400 naming the first parameter it cannot honour."""
    given = asked(query, REFUSED, PASSED)
    values: dict[str, Any] = {"model": models[0]}
    for name, all_values in given.items():
        last = all_values[-1]
        match name:
            case "model":
                values["model"] = offered_model(last, models)
            case "language":
                values["language"] = whisper_language(last)
            case (
                "detect_language"
                | "punctuate"
                | "smart_format"
                | "diarize"
                | "utterances"
                | "paragraphs"
                | "multichannel"
            ):
                values[name] = flag(name, last)
            case "profanity_filter":
                values[name] = flag(name, last)
            case "diarize_model":
                if last not in ("latest", "v1", "v2"):
                    raise bad_request(f"diarize_model must be latest, v1 or v2; got {last[:16]!r}")
                values["diarize"] = True
            case "utt_split":
                try:
                    values["utt_split"] = float(last)
                except ValueError:
                    raise bad_request(f"utt_split must be a number of seconds; got {last[:16]!r}") from None
                if not values["utt_split"] > 0:
                    raise bad_request("utt_split must be above 0 seconds")
            case "callback":
                values["callback"] = last
            case "callback_method":
                if last.strip().lower() != "post":
                    raise bad_request("callback_method: only POST callbacks are sent")
            case "tag":
                values["tags"] = all_values
            case "extra":
                values["extra"] = dict(_extra(value) for value in all_values)
            case "version":
                if last != "latest":
                    raise bad_request(f"version: only 'latest' is served; got {last[:32]!r}")
            case "alternatives":
                if last.strip() != "1":
                    raise bad_request("alternatives: one alternative is returned; send alternatives=1 or leave it out")
            case "keyterm" | "keywords" | "redact":
                pass  # vocabulary_of, redact_classes
            case _ if not asks_nothing(all_values):
                raise bad_request(f"{name[:64]}: not a parameter this service supports")
    if values.get("detect_language") and "language" not in given:
        values["language"] = None
    values["vocabulary"] = vocabulary_of(given)
    values["redact"] = redact_classes(given.get("redact", []), values.get("language", "en"))
    return ListenOptions.model_validate(values)


def vocabulary_of(given: Mapping[str, list[str]]) -> Vocabulary | None:
    """`keyterm` values as terms (a phrase is one value; no commas split them, as Deepgram's), then the words
    of `keywords`; a 400 naming the field for a limit broken or a boost that cannot be honoured."""
    terms = {
        "keyterm": [value.strip() for value in given.get("keyterm", []) if value.strip()],
        "keywords": [keyword(value) for value in given.get("keywords", []) if value.strip()],
    }
    try:
        return vocabulary_from(terms)
    except VocabularyRefused as refused:
        raise bad_request(str(refused)) from None


def keyword(value: str) -> str:
    """The word of `word:intensifier`: a positive intensifier boosts as a term does (its size is not graded);
    a negative one asks to suppress the word, which the service cannot do."""
    word, separator, intensifier = value.strip().rpartition(":")
    if not separator:
        return value.strip()
    try:
        boost = float(intensifier)
    except ValueError:
        boost = math.nan
    if not math.isfinite(boost):
        raise bad_request(f"keywords: the intensifier of {value[:64]!r} must be a number, as in word:2")
    if boost < 0:
        raise bad_request(f"keywords: {word[:64]!r} has a negative intensifier; suppressing a word is not supported")
    if not word.strip():
        raise bad_request(f"keywords: {value[:64]!r} names no word")
    return word.strip()


def _extra(value: str) -> tuple[str, str]:
    key, separator, rest = value.partition(":")
    if not separator or not key:
        raise bad_request(f"extra must be key:value; got {value[:64]!r}")
    return key, rest
