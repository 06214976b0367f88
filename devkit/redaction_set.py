"""Redaction's labelled set (tests/data/redaction/sentences.json), voiced by espeak-ng, and how a redacted text is
scored: an entity is hidden when none of its words or digit groups is left in the text, and a word was wrongly
hidden when redaction changed it though it belongs to no entity."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import jiwer

SET_PATH = Path(__file__).parent.parent / "tests" / "data" / "redaction" / "sentences.json"
_WORD = re.compile(r"[a-z]+|\d+")
_DIGIT_RUN = re.compile(r"\d[\d\s.-]*\d|\d")
FILLER = frozenset({"the", "of", "at", "dot", "com", "org", "net", "and", "in", "on"})
"""Words of an entity's value that say nothing of it when left (`the fifth of June`: `June` and `2001` do)."""
FILLED = frozenset({"date_of_birth", "email_address"})
"""Classes whose spoken form has fillers the value leaves out (`tom at yahoo dot com`)."""


@dataclass(frozen=True)
class Entity:
    cls: str
    value: str


@dataclass(frozen=True)
class Sentence:
    text: str
    entities: tuple[Entity, ...]


def sentences() -> list[Sentence]:
    raw = json.loads(SET_PATH.read_text(encoding="utf-8"))["sentences"]
    return [Sentence(s["text"], tuple(Entity(e["class"], e["value"]) for e in s["entities"])) for s in raw]


def entity_words(entity: Entity) -> set[str]:
    """What of the entity must not be left: its words (fillers aside) and its digit groups of 2 digits or more."""
    value = entity.value.lower()
    words = {word for word in _WORD.findall(value) if not word.isdigit() and word not in FILLER}
    digits = re.sub(r"\D", "", value)
    return words | ({digits} if len(digits) >= 2 else set())


def digit_runs(text: str) -> list[str]:
    """The text's numbers with their separators taken out (`411-1111` -> `4111111`)."""
    return [re.sub(r"\D", "", run) for run in _DIGIT_RUN.findall(text)]


DIGIT_WORDS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
               "seven": "7", "eight": "8", "nine": "9"}  # fmt: skip
_DIGIT_WORD = re.compile(r"\b(" + "|".join(DIGIT_WORDS) + r")\b")


def hidden(entity: Entity, redacted: str) -> bool:
    """Whether none of the entity's words, and no 2 digits or more of its number (digits written as words too),
    are left in `redacted`."""
    lowered = _DIGIT_WORD.sub(lambda match: DIGIT_WORDS[match.group(1)], redacted.lower())
    left_words = set(_WORD.findall(lowered))
    targets = entity_words(entity)
    number = next((word for word in targets if word.isdigit()), None)
    if any(word in left_words for word in targets if not word.isdigit()):
        return False
    return number is None or not any(len(run) >= 2 and run in number for run in digit_runs(lowered))


def is_entity_word(word: str, sentence: Sentence) -> bool:
    """A transcript word that belongs to one of the sentence's entities (its word, or digits of its number)."""
    bare = "".join(_WORD.findall(word.lower()))
    if not bare:
        return False
    if bare in FILLER and any(bare in _WORD.findall(e.value.lower()) or e.cls in FILLED for e in sentence.entities):
        return True  # `the` of `the fifth of June`
    for entity in sentence.entities:
        if any(part.isdigit() and any(part in t for t in entity_words(entity)) for part in _WORD.findall(word.lower())):
            return True  # `3rd` of `3 March 1985`
        targets = entity_words(entity)
        if bare in targets or (bare.isdigit() and any(bare in t for t in targets if t.isdigit())):
            return True
        if any(part in targets for part in _WORD.findall(word.lower())):
            return True
    return False


def _tokens(piece: str) -> list[str]:
    return _WORD.findall(_DIGIT_WORD.sub(lambda match: DIGIT_WORDS[match.group(1)], piece.lower()))


def entity_pieces(sentence: Sentence, pieces: list[str]) -> list[bool]:
    """Which of a transcript's pieces (words) stand where the spoken sentence has an entity: aligned to the
    reference's words, so a name or number speech recognition got wrong (`Darcia`, a digit lost) is still the
    entity's, and a word inserted beside an entity's word is too."""
    reference = [token for word in sentence.text.split() for token in _tokens(word)]
    is_entity = [is_entity_word(token, sentence) for token in reference]
    owner = [index for index, piece in enumerate(pieces) for _ in _tokens(piece)]
    hypothesis = [token for piece in pieces for token in _tokens(piece)]
    marked = [False] * len(hypothesis)
    if reference and hypothesis:
        for chunk in jiwer.process_words(" ".join(reference), " ".join(hypothesis)).alignments[0]:
            for offset, position in enumerate(range(chunk.hyp_start_idx, chunk.hyp_end_idx)):
                if chunk.type in ("equal", "substitute"):
                    marked[position] = is_entity[chunk.ref_start_idx + offset]
                elif chunk.type == "insert":
                    beside = [i for i in (chunk.ref_start_idx - 1, chunk.ref_start_idx) if 0 <= i < len(reference)]
                    marked[position] = any(is_entity[i] for i in beside)
    flags = [False] * len(pieces)
    for position, index in enumerate(owner):
        flags[index] = flags[index] or marked[position]
    return flags
