"""`profanity_filter=true`: profane words masked in a transcript, with glin-profanity's maintained word
lists (24 languages; leetspeak and Unicode look-alikes included).

The list is the transcript's language's plus English (sworn often in other languages' speech); a
language glin-profanity has no list for is checked against all of them. Masking keeps a word's length
and punctuation (`shit,` -> `****,`), so texts, segments, words and subtitles stay aligned with their
times, and a segment's text is masked exactly as its words are.
"""

import re
from functools import lru_cache
from typing import TypeVar, get_args

from glin_profanity import Filter, Language

from deployments.transcriber.languages import language_name
from deployments.types import DiarizedTranscript, DiarizedWord, PipelineResult, Transcript, Word

AnyWord = TypeVar("AnyWord", Word, DiarizedWord)

_TOKEN = re.compile(r"\S+")
_LETTER_OR_DIGIT = re.compile(r"\w", re.UNICODE)
LISTED_LANGUAGES = frozenset(get_args(Language))  # glin-profanity names them as Whisper does: "english", ...


@lru_cache(maxsize=32)
def _filter(language: str) -> Filter:
    name = language_name(language)
    if name not in LISTED_LANGUAGES:
        return Filter({"all_languages": True, "detect_leetspeak": True})
    return Filter({"languages": sorted({name, "english"}), "detect_leetspeak": True})


@lru_cache(maxsize=65_536)
def _masked_token(token: str, language: str) -> str:
    """Transcripts repeat their words, so each distinct token is looked up once."""
    if not _filter(language).is_profane(token):
        return token
    return _LETTER_OR_DIGIT.sub("*", token)


def mask_text(text: str, language: str) -> str:
    """`text` with every profane whitespace-separated token masked; spacing kept as it was."""
    return _TOKEN.sub(lambda match: _masked_token(match.group(), language), text)


def mask_transcript(result: PipelineResult) -> PipelineResult:
    """The same transcript with text, segments (each in its own language, where it has one) and words masked."""
    language = result.language

    def masked_words(words: list[AnyWord]) -> list[AnyWord]:
        return [word.model_copy(update={"word": mask_text(word.word, language)}) for word in words]

    if isinstance(result, Transcript):
        return result.model_copy(
            update={
                "segments": [
                    s.model_copy(update={"text": mask_text(s.text, s.language or language)}) for s in result.segments
                ],
                "words": masked_words(result.words),
            }
        )
    assert isinstance(result, DiarizedTranscript)
    return result.model_copy(
        update={
            "text": mask_text(result.text, language),
            "segments": [
                s.model_copy(update={"text": mask_text(s.text, language), "words": masked_words(s.words)})
                for s in result.segments
            ],
            "words": masked_words(result.words),
        }
    )
