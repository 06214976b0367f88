"""Words of names, places and organisations found once, redacted wherever they come again in the same request
or session: the named-entity model finds `Sarah Johnson` after `my name is`, not `Johnson` alone later, nor a
live reading's `Johnsonat` (`johnson at`), whose sentence gives it nothing to go on."""

import re

from deployments.redaction.finder import Entity
from deployments.redaction.options import RedactionClass

NAMED = frozenset({RedactionClass.person_name, RedactionClass.location, RedactionClass.organization})
"""Classes whose words are remembered (a card or phone number is found by its shape every time)."""
SHORTEST_KNOWN = 3
"""A remembered word has at least this many letters (not an initial, nor `Mr`)."""
GLUED_ENDINGS = ("", "s", "at")
"""A known word as speech recognition may write it: alone, with a plural or possessive `s`, glued to `at`."""
_LETTERS = re.compile(r"[^\W\d_]+")

KnownWords = dict[str, RedactionClass]
"""A remembered word, lower case, and the class of the entity it was found in."""


def remember(text: str, entities: list[Entity], known: KnownWords) -> None:
    """Adds the words of `entities` of a `NAMED` class (of `text`) to `known`."""
    for entity in entities:
        if entity.cls in NAMED:
            for word in _LETTERS.findall(text[entity.start : entity.end]):
                if len(word) >= SHORTEST_KNOWN:
                    known[word.lower()] = entity.cls


def with_known_words(text: str, entities: list[Entity], known: KnownWords) -> list[Entity]:
    """`entities` and, outside them, each capitalised word of `text` that is a known word (`GLUED_ENDINGS`), in
    order."""
    if not known:
        return entities
    found = list(entities)
    for match in _LETTERS.finditer(text):
        if not match.group()[0].isupper():
            continue  # `bill`, `will`, `mark`: a name's word is known as a name only where it is written as one
        cls = _known_class(match.group().lower(), known)
        if cls is not None and not any(e.start < match.end() and match.start() < e.end for e in entities):
            found.append(Entity(match.start(), match.end(), cls))
    return sorted(found, key=lambda entity: entity.start)


def _known_class(word: str, known: KnownWords) -> RedactionClass | None:
    for ending in GLUED_ENDINGS:
        stem = word[: len(word) - len(ending)]
        if word.endswith(ending) and stem in known:
            return known[stem]
    return None
