"""Redaction of a live session's events: streamed words held back only while an entity may still be forming.

A channel's final words arrive a few at a time (`transcript` events). Each time, the words not sent yet are read
with the last sent ones as context; those that may still be the start of an entity stay held: a trailing run of
words with digits or spoken digits, capitalised words (a name's next part), e-mail pieces (`at`, `dot`, `x@y`),
and every word of an entity that reaches them. The rest go out redacted, as events of the same speaker, channel
and turn. A turn's end, and the session's, release everything (an entity does not outlive its turn); a pause in
speech releases what is not a number or an address (a card number is often read in groups with pauses between),
with addresses asked all but a last word that ends no sentence (a live reading may write `gmail` before a pause
and `.com` after it).
Turn and session texts (second readings) are redacted whole.
A name or place found once stays known for the session (the session's `Redactor` remembers it: `known_words`)."""

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from deployments.live._buffer import SENTENCE_ENDS
from deployments.live.events import LiveEvent, LiveWord, SessionEnded, SpeechEnded, TranscriptEvent, TurnEnded
from deployments.redaction.finder import MAIL_PROVIDERS, Entity
from deployments.redaction.options import RedactionClass
from deployments.redaction.redactor import Redactor

CONTEXT_WORDS = 12
"""Words already sent that are read with the held ones, so that the named-entity model sees their sentence."""
DIGIT_WORDS = frozenset(
    {
        "zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
        "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "double",
        "triple", "dash", "hyphen",
    }
)  # fmt: skip
ADDRESS_WORDS = frozenset({"at", "dot", "underscore", "plus"})
_DIGIT = re.compile(r"\d")
_INNER_DOT_OR_AT = re.compile(r"\w[.@]\w|@")
_BARE = re.compile(r"[^\w@.-]+")
_REPEATED_TOKEN = re.compile(r"(\[[A-Z_]+(?:_[0-9a-f]+)?\])(?: \1)+")


def _bare(text: str) -> str:
    return _BARE.sub("", text).lower()


def numeric_or_address(words: list[str], index: int) -> bool:
    """Whether a number, card or e-mail address may go on after `words[index]`: digits (or digit words), `at`,
    `dot`, a mail provider (`gmail`), a word with `@` or an inner dot (`jane.doe`), `.com`, the word after `at` (a
    domain's first part), or the word before one of those address words (its local part)."""
    text = words[index]
    bare = _bare(text)
    before = _bare(words[index - 1]) if index > 0 else ""
    after = _bare(words[index + 1]) if index + 1 < len(words) else ""
    return bool(
        _DIGIT.search(text)
        or bare in DIGIT_WORDS
        or bare in ADDRESS_WORDS
        or bare in MAIL_PROVIDERS
        or _INNER_DOT_OR_AT.search(text)
        or text.startswith(".")
        or before in ("at", "@")
        or after in ADDRESS_WORDS
    )


def may_continue(words: list[str], index: int) -> bool:
    """Whether an entity may go on after `words[index]`: numeric or address-like, or capitalised (a name's next
    part)."""
    text = words[index]
    capitalised = text[:1].isupper() and not text.endswith(SENTENCE_ENDS)
    return numeric_or_address(words, index) or capitalised


Keep = Callable[[list[str], int], bool]


@dataclass
class _Held:
    event: TranscriptEvent
    word: LiveWord


@dataclass
class _Channel:
    sent: list[str] = field(default_factory=list)  # the pieces sent last, as context
    held: list[_Held] = field(default_factory=list)


class LiveRedaction:
    """One session's filter over its events (`process` each, in order)."""

    def __init__(self, redactor: Redactor, language_of: Callable[[int | None], str | None]) -> None:
        self.redactor = redactor
        # any word may be an address's first part (`jane` of `jane at example dot com`): with addresses asked, the
        # last word heard waits for the next one (or a pause)
        self.hold_last = RedactionClass.email_address in redactor.options.classes
        self.language_of = language_of  # a channel's language, given or detected (None: not yet)
        self.channels: dict[int | None, _Channel] = {}

    async def process(self, event: LiveEvent) -> list[LiveEvent]:
        """The events to send for `event`: none while all its words are held, more than one when it releases."""
        if isinstance(event, TranscriptEvent):
            channel = self.channels.setdefault(event.channel, _Channel())
            channel.held.extend(_Held(event, word) for word in event.words)
            return await self._release(event.channel, keep=may_continue, hold_last=self.hold_last)
        if isinstance(event, SpeechEnded):
            return await self._release(event.channel, keep=numeric_or_address, hold_last=self._open_ended(event))
        if isinstance(event, TurnEnded):
            released = await self._release(event.channel, keep=None)
            return [*released, await self._turn(event)]
        if isinstance(event, SessionEnded):
            released = [e for channel in list(self.channels) for e in await self._release(channel, keep=None)]
            return [*released, await self._ended(event)]
        return [event]

    def _open_ended(self, pause: SpeechEnded) -> bool:
        """Whether the last word before a pause may be an address's part (`gmail`, then `.com` after the pause):
        with addresses asked, one that does not end a sentence or a clause."""
        channel = self.channels.get(pause.channel)
        last = channel.held[-1].word.text if channel is not None and channel.held else ""
        return self.hold_last and not last.endswith((*SENTENCE_ENDS, ","))

    def _language(self, channel: int | None) -> str:
        return self.language_of(channel) or "en"

    async def _release(self, index: int | None, keep: Keep | None, hold_last: bool = False) -> list[LiveEvent]:
        channel = self.channels.get(index)
        if channel is None or not channel.held:
            return []
        context = channel.sent[-CONTEXT_WORDS:]
        pieces = [*context, *(" " + held.word.text for held in channel.held)]
        entities = await asyncio.to_thread(self.redactor.entities, pieces, self._language(index))
        count = len(channel.held)
        if keep is not None:
            words = [piece.strip() for piece in pieces]
            count -= hold_last
            while count and keep(words, len(context) + count - 1):
                count -= 1
        count = _before_open_entity(pieces, len(context), count, entities)
        if count == 0:
            return []
        redacted = self.redactor.applied(pieces, entities)[len(context) : len(context) + count]
        released, channel.held = channel.held[:count], channel.held[count:]
        channel.sent = [*context, *redacted][-CONTEXT_WORDS:]
        return _events(released, redacted)

    async def _turn(self, event: TurnEnded) -> TurnEnded:
        pieces = [" " + word.text for word in event.words]
        language = self._language(event.channel)
        redacted = await asyncio.to_thread(self.redactor.pieces, pieces, language)
        text = await asyncio.to_thread(self.redactor.text, event.text, language)
        words = [w.model_copy(update={"text": r.strip()}) for w, r in zip(event.words, redacted, strict=True)]
        return event.model_copy(update={"text": text, "words": words})

    async def _ended(self, event: SessionEnded) -> SessionEnded:
        if isinstance(event.text, str):
            return event.model_copy(
                update={"text": await asyncio.to_thread(self.redactor.text, event.text, self._language(None))}
            )
        texts = [
            await asyncio.to_thread(self.redactor.text, text, self._language(index))
            for index, text in enumerate(event.text)
        ]
        return event.model_copy(update={"text": texts})


def _before_open_entity(pieces: list[str], first: int, count: int, entities: list[Entity]) -> int:
    """`count` held words, or fewer: none of an entity that goes on past them is released."""
    starts, offset = [], 0
    for piece in pieces:
        starts.append(offset)
        offset += len(piece)
    boundary = starts[first + count] if first + count < len(pieces) else offset
    for entity in entities:
        if entity.start < boundary < entity.end:
            while count and starts[first + count - 1] + len(pieces[first + count - 1]) > entity.start:
                count -= 1
    return count


def _events(released: list[_Held], redacted: list[str]) -> list[LiveEvent]:
    """Released words as `transcript` events, one per run of one speaker's words in one turn: each word with its
    times (an entity's words each carry its token), the text with one token for the entity."""
    events: list[LiveEvent] = []
    run: list[LiveWord] = []
    for index, (held, text) in enumerate(zip(released, redacted, strict=True)):
        run.append(held.word.model_copy(update={"text": text.strip()}))
        last = index + 1 == len(released) or _voice(released[index + 1].event) != _voice(held.event)
        if last:
            text = _REPEATED_TOKEN.sub(r"\1", "".join(" " + w.text for w in run))  # one token an entity, in text
            events.append(held.event.model_copy(update={"text": text, "words": run}))
            run = []
    return events


def _voice(event: TranscriptEvent) -> tuple[int | None, str | None, int | None, int | None]:
    return event.speaker, event.speaker_name, event.channel, event.turn
