"""Correction after decoding: a word, or a run of up to `MAX_RUN` words, that the model wrote and that sounds like
a term takes the term's spelling (`Metaformin` -> `Metformin`, `lisa nopril` -> `lisinopril`).

"Sounds like" is RapidFuzz's ratio between rough phonetic keys (`sound_key`) at or above a threshold. A run made
only of common words (`_known_words`) or already written as a term is right as written and never changes, so
that a transcript's ordinary words are safe whatever the list. Spellings (`Spelling(heard, written)`) replace
exactly. The decisions are made on whitespace-separated tokens, so a segment's text and its timed words, which
hold the same tokens, are corrected alike."""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rapidfuzz import fuzz, process

from deployments.types import ChunkTranscript, Word
from deployments.vocabulary._known_words import known_words
from deployments.vocabulary.terms import Spelling

MAX_RUN = 3
"""Most words the model may have split one term into (a term's own words count on top)."""
MIN_KEY_CHARS = 4
"""Shorter words are too alike to tell apart by sound."""
_TOKEN = re.compile(r"\s*\S+")
_PARTS = re.compile(r"^(\s*)(\W*)(.*?)(\W*)$", re.DOTALL)
_SENTENCE_END = re.compile(r"[.!?;:,]$")
_LATIN_SOUNDS = (
    ("ph", "f"), ("ck", "k"), ("qu", "kv"), ("x", "ks"), ("w", "v"), ("ce", "se"), ("ci", "si"), ("cy", "si"),
    ("c", "k"), ("z", "s"), ("y", "i"), ("ee", "i"), ("ea", "i"), ("ou", "u"), ("oo", "u"), ("h", ""),
)  # fmt: skip
_CYRILLIC_SOUNDS = (  # unstressed "o" is said "a" (akanye); soft and hard signs are not sounds
    ("ё", "е"), ("о", "а"), ("э", "е"), ("я", "а"), ("ю", "у"), ("й", "и"), ("ы", "и"), ("ь", ""), ("ъ", ""),  # noqa: RUF001
)  # fmt: skip


def sound_key(text: str) -> str:
    """A rough phonetic key: letters only, lower case, spellings that sound alike made one (Latin and Cyrillic),
    doubled letters made single."""
    key = "".join(char for char in text.lower() if char.isalpha())
    for written, sound in (*_LATIN_SOUNDS, *_CYRILLIC_SOUNDS):
        key = key.replace(written, sound)
    return re.sub(r"(.)\1+", r"\1", key)


@dataclass(frozen=True)
class Replacement:
    """Tokens `start` to `end` (excluded) become the one token `text` (with the first's leading space)."""

    start: int
    end: int
    text: str
    score: float = 100


def _parts(token: str) -> tuple[str, str, str, str]:
    match = _PARTS.match(token)
    assert match is not None
    space, before, core, after = match.groups()
    return space, before, core, after


def _common(word: str) -> bool:
    """Right as written: a common word, or one of one or two letters (in, и, a: too short to be a misheard term)."""
    return len(word) <= 2 or word.lower() in known_words()


class Corrector:
    """The terms and spellings of one request (or live session), ready to correct token sequences."""

    def __init__(self, terms: Sequence[str], spellings: Sequence[Spelling] = (), threshold: float = 80) -> None:
        self.threshold = threshold
        self.terms = tuple(terms)
        self.written = {term.lower() for term in self.terms} | {s.written.lower() for s in spellings}
        self.spellings = {" ".join(heard.lower().split()): s.written for s in spellings for heard in s.heard}
        self.keys = [sound_key(term) for term in self.terms]
        self.longest = max((len(term.split()) for term in self.terms), default=1) + MAX_RUN - 1
        self.longest = max(self.longest, *(len(heard.split()) for heard in self.spellings), 1)

    def replacements(self, tokens: Sequence[str]) -> list[Replacement]:
        """Where the tokens (Whisper's words, each with its leading space and punctuation) should change."""
        cores = [_parts(token)[2] for token in tokens]
        found: list[Replacement] = []
        index = 0
        while index < len(tokens):
            best = self._best_run(tokens, cores, index)
            if best is not None and best.end > index + 1 and _common(cores[index]):
                later = self._best_run(tokens, cores, index + 1)  # a common word kept if the rest sounds as right
                if later is not None and later.score >= best.score:
                    best = None
            if best is None:
                index += 1
                continue
            found.append(best)
            index = best.end
        return found

    def _best_run(self, tokens: Sequence[str], cores: list[str], start: int) -> Replacement | None:
        """The longest spelling, else the best-sounding term, that the run from `start` may become."""
        best: tuple[float, int, str] | None = None
        for end in range(start + 1, min(start + self.longest, len(tokens)) + 1):
            run = cores[start:end]
            if not all(run) or any(_SENTENCE_END.search(token) for token in tokens[start : end - 1]):
                break
            heard = " ".join(run).lower()
            if heard in self.spellings:
                best = (101.0, end, self.spellings[heard])
                continue
            if heard in self.written or any(word.lower() in self.written for word in run):
                break  # already written as a term: right as written
            if all(_common(word) for word in run):
                continue  # common words: right as written
            key = sound_key("".join(run))
            if len(key) < MIN_KEY_CHARS or not self.keys:
                continue
            match = process.extractOne(key, self.keys, scorer=fuzz.ratio, score_cutoff=self.threshold)
            if match is not None and (best is None or match[1] > best[0]):
                best = (match[1], end, self.terms[match[2]])
        if best is None:
            return None
        score, end, written = best
        space, before, core, _ = _parts(tokens[start])
        after = _parts(tokens[end - 1])[3]
        if core[:1].isupper() and written.islower():
            written = written[0].upper() + written[1:]  # a sentence's first word
        text = f"{space}{before}{written}{after}"
        if end == start + 1 and text == tokens[start]:
            return None
        return Replacement(start, end, text, score)

    def correct_text(self, text: str) -> str:
        """A text with its tokens corrected; its spacing kept."""
        tokens = _TOKEN.findall(text)
        tail = text[len("".join(tokens)) :]
        return "".join(apply(tokens, self.replacements(tokens), lambda first, last, new: new)) + tail


Item = TypeVar("Item")


def apply(
    items: Sequence[Item], replacements: list[Replacement], merge: Callable[[Item, Item, str], Item]
) -> list[Item]:
    """Items with each replacement's run merged into one item (`merge(first, last, text)`)."""
    out: list[Item] = []
    index = 0
    for replacement in replacements:
        out.extend(items[index : replacement.start])
        out.append(merge(items[replacement.start], items[replacement.end - 1], replacement.text))
        index = replacement.end
    out.extend(items[index:])
    return out


def _merged_word(first: Word, last: Word, text: str) -> Word:
    probs = [prob for prob in (first.prob, last.prob) if prob is not None]
    return Word(word=text, start=first.start, end=last.end, prob=min(probs) if probs else None)


def correct_words(corrector: Corrector, words: list[Word]) -> list[Word]:
    """Timed words corrected: a run that becomes a term is one word, from the first's start to the last's end."""
    return apply(words, corrector.replacements([word.word for word in words]), _merged_word)


def correct_chunk(corrector: Corrector, transcript: ChunkTranscript) -> ChunkTranscript:
    """A chunk's segments' texts and its words corrected alike."""
    segments = [
        segment.model_copy(update={"text": corrector.correct_text(segment.text)}) for segment in transcript.segments
    ]
    return transcript.model_copy(update={"segments": segments, "words": correct_words(corrector, transcript.words)})
