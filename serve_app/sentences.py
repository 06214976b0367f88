"""`timestamp_granularities[]=sentence`: the transcript's words grouped into sentences, timed by their words.

Boundaries come from pysbd (rule-based sentence boundary detection for 23 languages: it knows that the
dot of "Mr." or "3.5" ends nothing); languages it lacks use its English rules, which split at . ! ? too.
"""

from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

from deployments.types import Word
from serve_app.schemas import Sentence


@lru_cache(maxsize=32)
def _segmenter(language: str) -> pysbd.Segmenter:
    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False, char_span=True)


def sentences(words: list[Word], language: str) -> list[Sentence]:
    """Whisper's words carry their leading space, so joined they are the text; each word goes to the
    sentence whose span holds its first character."""
    text, starts = "", []
    for word in words:
        starts.append(len(text) + len(word.word) - len(word.word.lstrip()))
        text += word.word
    if not text.strip():
        return []
    ends = [span.end for span in _segmenter(language).segment(text)]
    groups: list[list[Word]] = [[] for _ in ends]
    sentence = 0
    for word, start in zip(words, starts, strict=True):
        while sentence < len(ends) - 1 and start >= ends[sentence]:
            sentence += 1
        groups[sentence].append(word)
    return [
        Sentence(start=group[0].start, end=group[-1].end, text="".join(word.word for word in group).strip())
        for group in groups
        if group
    ]
