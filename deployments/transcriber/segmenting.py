"""Timed words into sentences and segments.

Sentence boundaries come from pysbd (rule-based sentence boundary detection for 23 languages: it knows
that the dot of "Mr." or "3.5" ends nothing); languages it lacks use its English rules, which split at
. ! ? too. Segments are what Whisper's timestamp tokens would have given, made from aligned words
instead: a sentence, cut again at a pause and where it runs longer than a subtitle should.
"""

from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

from deployments.types import Word

CLAUSE_ENDS = (",", ";", ":", "，", "、", "；", "：")


@lru_cache(maxsize=32)
def _segmenter(language: str) -> pysbd.Segmenter:
    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False, char_span=True)


def sentence_groups(words: list[Word], language: str) -> list[list[Word]]:
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
    return [group for group in groups if group]


def segment_groups(words: list[Word], language: str, pause_s: float, max_duration_s: float) -> list[list[Word]]:
    """Sentences, each cut before a word that follows a pause of `pause_s` or more, and cut again when it
    would last longer than `max_duration_s`: after its last clause mark (a comma, ...) when it has one,
    else before the word that would make it too long."""
    segments: list[list[Word]] = []
    for sentence in sentence_groups(words, language):
        current: list[Word] = []
        for word in sentence:
            if current and word.start - current[-1].end >= pause_s:
                segments.append(current)
                current = []
            while current and word.end - current[0].start > max_duration_s:  # each pass leaves fewer words
                cut = _after_last_clause(current)
                segments.append(current[:cut])
                current = current[cut:]
            current.append(word)
        segments.append(current)
    return segments


def _after_last_clause(words: list[Word]) -> int:
    """The index after the last word that ends a clause, or len(words) when none does."""
    for index in range(len(words), 0, -1):
        if words[index - 1].word.rstrip().endswith(CLAUSE_ENDS):
            return index
    return len(words)
