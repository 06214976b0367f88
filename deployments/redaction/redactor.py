"""A transcript with its entities hidden, everywhere its words appear.

A text is redacted as pieces (a transcript's segments, or its words) read as one text, so that an entity that a
segment or word boundary cuts is still found whole; each piece's part of an entity is replaced: by the class's
token (`[PERSON_NAME]`), its characters masked (`*****`, spaces kept), or the entity's keyed hash
(`[PERSON_NAME_5f0c2a91]`). A word keeps its times; a piece that holds several entities gets a token for each."""

import hashlib
import hmac
import re
from collections.abc import Sequence
from typing import TypeVar

from deployments.redaction.finder import Entity, EntityFinder
from deployments.redaction.known_words import KnownWords, remember, with_known_words
from deployments.redaction.options import RedactionOptions
from deployments.types import DiarizedSegment, DiarizedTranscript, DiarizedWord, PipelineResult, Transcript, Word

AnyWord = TypeVar("AnyWord", Word, DiarizedWord)
_NOT_SPACE = re.compile(r"\S")
_NORMAL = re.compile(r"[\W_]+")
HASH_CHARS = 8


def merged_words(words: list[AnyWord], texts: list[str]) -> list[AnyWord]:
    """The words with their redacted texts; a word left with no letter or digit (the rest of an entity whose token
    the word before carries: `415` `-555` `-2671.`) joins the word before it, which takes its end time."""
    out: list[AnyWord] = []
    for word, text in zip(words, texts, strict=True):
        if text == word.word:
            out.append(word)
        elif out and not any(character.isalnum() for character in text):
            last = out[-1]
            out[-1] = last.model_copy(update={"word": last.word + text.strip(), "end": max(last.end, word.end)})
        else:
            out.append(word.model_copy(update={"word": text}))
    return out


class Redactor:
    """One request's redaction: its options, the process's finder and hash key."""

    def __init__(self, options: RedactionOptions, finder: EntityFinder, hash_key: bytes = b"") -> None:
        self.options, self.finder, self.hash_key = options, finder, hash_key
        self.known: KnownWords = {}  # the words of names and places found so far (`known_words`)

    def token(self, entity_text: str, entity: Entity) -> str:
        label = entity.cls.value.upper()
        if self.options.mode == "hash":
            normal = _NORMAL.sub(" ", entity_text.lower()).strip()
            message = f"{self.options.scope}\0{entity.cls.value}\0{normal}".encode()
            return f"[{label}_{hmac.new(self.hash_key, message, hashlib.sha256).hexdigest()[:HASH_CHARS]}]"
        return f"[{label}]"

    def pieces(self, pieces: Sequence[str], language: str) -> list[str]:
        """`pieces` with every entity found in their joined text replaced in each piece it overlaps."""
        return self.applied(pieces, self.entities(pieces, language))

    def entities(self, pieces: Sequence[str], language: str) -> list[Entity]:
        """The entities of the pieces' joined text, and the words of names and places this redactor found before
        (in this text or an earlier one of its request or session) wherever the finder missed them."""
        text = "".join(pieces)
        found = self.finder.find(text, self.options.classes, language)
        remember(text, found, self.known)
        return with_known_words(text, found, self.known)

    def applied(self, pieces: Sequence[str], entities: list[Entity]) -> list[str]:
        """`pieces` with `entities` (of their joined text) replaced in each piece they overlap."""
        if not entities:
            return list(pieces)
        text, out, offset = "".join(pieces), [], 0
        for piece in pieces:
            out.append(self._replace(piece, offset, text, entities))
            offset += len(piece)
        return out

    def text(self, text: str, language: str) -> str:
        return self.pieces([text], language)[0]

    def _replace(self, piece: str, offset: int, text: str, entities: list[Entity]) -> str:
        end = offset + len(piece)
        parts, cursor = [], offset
        for entity in entities:
            start, stop = max(entity.start, offset), min(entity.end, end)
            if start >= stop:
                continue
            parts.append(text[cursor:start])
            inside = text[start:stop]
            if self.options.mode == "mask":
                parts.append(_NOT_SPACE.sub(self.options.mask_char, inside))
            elif start > entity.start and not inside[:1].isspace():
                pass  # the entity's token is out already: this piece goes on the word before it (`415` `-555`)
            else:
                lead = inside[: len(inside) - len(inside.lstrip())]  # a word's leading space stays outside
                parts.append(lead + self.token(text[entity.start : entity.end], entity))
            cursor = stop
        parts.append(text[cursor:end])
        return "".join(parts)

    def words(self, words: list[AnyWord], language: str) -> list[AnyWord]:
        return merged_words(words, self.pieces([word.word for word in words], language))

    def transcript(self, result: PipelineResult, translated: bool = False) -> PipelineResult:
        """The transcript with its text, segments, words (and, diarized, segments' words) redacted. Raises
        `RedactionUnavailable` for named-entity classes when its text is not English (a translation's is)."""
        language = "en" if translated else result.language
        texts = self.pieces([segment.text for segment in result.segments], language)
        if isinstance(result, Transcript):
            segments = [s.model_copy(update={"text": t}) for s, t in zip(result.segments, texts, strict=True)]
            return result.model_copy(update={"segments": segments, "words": self.words(result.words, language)})
        assert isinstance(result, DiarizedTranscript)
        redacted = self.pieces([word.word for word in result.words], language)
        words = merged_words(result.words, redacted)
        by_time = {(w.start, w.end, w.speaker): new for w, new in zip(result.words, redacted, strict=True)}

        def segment_words(segment: DiarizedSegment) -> list[DiarizedWord]:
            texts = [by_time.get((w.start, w.end, w.speaker), w.word) for w in segment.words]
            return merged_words(segment.words, texts)

        diarized = [
            s.model_copy(update={"text": t, "words": segment_words(s)})
            for s, t in zip(result.segments, texts, strict=True)
        ]
        return result.model_copy(
            update={"text": self.text(result.text, language), "segments": diarized, "words": words}
        )
