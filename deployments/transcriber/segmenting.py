"""Timed words into sentences and segments.

Sentence boundaries come from pysbd (rule-based sentence boundary detection for 23 languages: it knows
that the dot of "Mr." or "3.5" ends nothing); languages it lacks use its English rules, which split at
. ! ? too. Segments are what Whisper's timestamp tokens would have given, made from aligned words
instead: a sentence, cut again at a pause and where it runs longer than a subtitle should.

Timed words and segments are first fitted into their chunk (`fit_in_chunk`): an aligned word can come
back without any time at all, and a zero-length word or segment is a subtitle nobody can read.
"""

from functools import lru_cache
from typing import TypeVar

import pysbd
from pysbd.languages import LANGUAGE_CODES

from deployments.types import Segment, Word

CLAUSE_ENDS = (",", ";", ":", "，", "、", "；", "：")  # noqa: RUF001  # and their CJK (full-width) forms
MIN_DURATION_S = 0.02
"""The alignment's time step (50 cross-attention frames a second): a word it gave no frame gets one."""

Timed = TypeVar("Timed", Word, Segment)


def fit_in_chunk(items: list[Timed], chunk_s: float, min_s: float = MIN_DURATION_S) -> list[Timed]:
    """Words (or segments) in time order, each lasting at least `min_s`, none overlapping the next, all
    within the chunk's [0, chunk_s]; items that already are so are returned as they were.

    Whisper's alignment gives a word no time at all when dynamic time warping puts it on no frame of its
    own (a quick word, or a repeated one). Such an item takes the time it lacks from what follows it: the
    gap after it, then the start of the next item, which moves up only as far as needed; at the chunk's
    end, items move back instead. So order is kept, and times move by as little as the rule needs.
    Times are whole milliseconds, as everywhere in a transcript. (Were there more items than milliseconds
    in the chunk, each would get one millisecond and the first ones could not all fit.)"""
    if not items:
        return items
    end = int(chunk_s * 1000)  # rounded down: within the chunk
    least = max(1, min(round(min_s * 1000), end // len(items)))
    spans, floor = [], 0
    for item in items:  # forwards: each item after the last one, at least `least` long
        start = max(round(item.start * 1000), floor)
        stop = max(round(item.end * 1000), start + least)
        spans.append([start, stop])
        floor = stop
    ceiling = end
    for span in reversed(spans):  # backwards: within the chunk, moving items back from its end
        span[1] = min(span[1], ceiling)
        span[0] = max(0, min(span[0], span[1] - least))
        ceiling = span[0]
    fitted = []
    for item, (start, stop) in zip(items, spans, strict=True):
        moved = (round(item.start * 1000), round(item.end * 1000)) != (start, stop)
        fitted.append(item.model_copy(update={"start": start / 1000, "end": stop / 1000}) if moved else item)
    return fitted


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
