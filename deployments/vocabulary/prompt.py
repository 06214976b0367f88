"""Decoding bias: the terms as Whisper's prompt (the previous-text context both engines take from
`ChunkOptions.prompt`), shaped as faster-whisper's `hotwords` are (the terms, before any previous text).

Whisper keeps at most 223 prompt tokens (half its 448-token context) and drops the oldest first, so the terms
come first and the client's own prompt last, where it keeps its meaning (the text just before the audio).
The terms get `prompt_tokens` of that budget; when more are given than fit (a dictionary of thousands), those
that sound closest to words of a first reading of the audio go in (`choose_terms`)."""

import math
import re
from collections.abc import Sequence

import numpy as np
from rapidfuzz import fuzz, process

from deployments.vocabulary.correction import MAX_RUN, sound_key

BYTES_PER_TOKEN = 3
"""A term's tokens, estimated without the tokenizer: Whisper's byte-level BPE takes about one token per 3 UTF-8
bytes of a rare word (a Cyrillic letter is 2 bytes), and one for the separator."""
MIN_LIKENESS = 50
"""A term that sounds less like any run of the first reading than this (RapidFuzz ratio) is not chosen."""


def term_tokens(term: str) -> int:
    return math.ceil(len(term.encode("utf-8")) / BYTES_PER_TOKEN) + 1


def fitting(terms: Sequence[str], budget: int) -> list[str]:
    """The terms, in order, while their tokens fit the budget."""
    chosen: list[str] = []
    used = 0
    for term in terms:
        used += term_tokens(term)
        if used > budget:
            break
        chosen.append(term)
    return chosen


def fits(terms: Sequence[str], budget: int) -> bool:
    return sum(term_tokens(term) for term in terms) <= budget


def choose_terms(terms: Sequence[str], reading: str, budget: int) -> list[str]:
    """All the terms if they fit; otherwise those that sound most like a run of words of `reading` (a first,
    unbiased reading of the same audio) at least `MIN_LIKENESS`, best first, while they fit."""
    if fits(terms, budget):
        return list(terms)
    words = [word for word in (sound_key(token) for token in reading.split()) if word]
    runs = {"".join(words[start:end]) for start in range(len(words)) for end in range(start + 1, start + MAX_RUN + 1)}
    runs.discard("")
    if not runs or not terms:
        return []
    keys = [sound_key(term) for term in terms]
    scores = process.cdist(keys, sorted(runs), scorer=fuzz.ratio, dtype=np.uint8).max(axis=1)
    ranked = sorted(
        (index for index in range(len(terms)) if scores[index] >= MIN_LIKENESS), key=lambda i: -int(scores[i])
    )
    return fitting([terms[index] for index in ranked], budget)


def echoes(reading: str, first_reading: str, terms: Sequence[str]) -> bool:
    """Whether a reading with the terms in its prompt went wrong the way prompted Whisper does: the prompt read
    back (a term three times, or mostly terms: three or more, and more than half the words, where the first
    reading had at most one), or far more or fewer words than the reading without them."""
    words, first_words = reading.split(), first_reading.split()
    if reads_back(reading, terms) and _listed(first_reading, terms) <= 1:
        return True
    return bool(first_words) and not 0.7 <= len(words) / len(first_words) <= 1.4


def _listed(reading: str, terms: Sequence[str]) -> int:
    term_words = {word for term in terms for word in term.lower().split()}
    return sum(word.strip(".,;:!?") in term_words for word in reading.lower().split())


def _occurrences(term: str, reading: str) -> int:
    """How often the term is written as words of its own (`Go` is not in `going`)."""
    return len(re.findall(rf"(?<!\w){re.escape(term)}(?!\w)", reading, re.IGNORECASE))


def reads_back(reading: str, terms: Sequence[str]) -> bool:
    """Whether a reading is its prompt read back rather than the speech: a term written three times, or three or
    more terms' words making more than half of its words."""
    if any(_occurrences(term, reading) >= 3 for term in terms):
        return True
    listed = _listed(reading, terms)
    return listed >= 3 and listed > len(reading.split()) / 2


def biasing_prompt(terms: Sequence[str], client_prompt: str | None) -> str | None:
    """Whisper's prompt: the terms, then the client's prompt (None when there is neither)."""
    if not terms:
        return client_prompt
    listed = " " + ", ".join(terms) + "."  # a leading space, as faster-whisper's hotwords: words' own tokens
    return f"{listed} {client_prompt}" if client_prompt else listed
