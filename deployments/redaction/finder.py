"""Where a text's entities of the asked classes are: Presidio's analyzer over this service's recognisers
(`_recognizers`), its findings mapped to `RedactionClass`es, dates kept as dates of birth only after a cue
(`born`, `birth`, `DOB`), overlapping findings merged under the most specific class."""

import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from deployments.errors import InputRejectedError
from deployments.redaction.options import RedactionClass, unserved_classes

if TYPE_CHECKING:  # Presidio imports spaCy, which imports PyTorch: only a process that redacts pays for them
    from presidio_analyzer import AnalyzerEngine, RecognizerResult

EMAIL = "EMAIL_ADDRESS"
NUMBERS = "NUMBERS"

PRESIDIO_ENTITIES: dict[RedactionClass, str] = {
    RedactionClass.credit_card_number: "CREDIT_CARD",
    RedactionClass.us_social_security_number: "US_SSN",
    RedactionClass.phone_number: "PHONE_NUMBER",
    RedactionClass.email_address: EMAIL,
    RedactionClass.iban: "IBAN_CODE",
    RedactionClass.ip_address: "IP_ADDRESS",
    RedactionClass.date_of_birth: "DATE_TIME",
    RedactionClass.person_name: "PERSON",
    RedactionClass.location: "LOCATION",
    RedactionClass.organization: "ORGANIZATION",
    RedactionClass.numbers: NUMBERS,
}
PRIORITY = list(PRESIDIO_ENTITIES)
"""The most specific class first: where findings overlap, the earlier class names the merged entity."""
MAIL_PROVIDERS = ("gmail", "googlemail", "yahoo", "ymail", "hotmail", "outlook", "icloud", "aol", "protonmail",
                  "proton", "gmx", "yandex", "zoho", "fastmail", "msn")  # fmt: skip
"""Personal mail providers' domains: an address's part wherever they are heard (`gmail dot com`)."""
MIN_SCORE = 0.35
"""Presidio's scores: a phone number without context scores 0.4, an SSN-shaped number 0.5 (0.85 with context)."""
BIRTH_CUE = re.compile(r"\b(born|birth|birthday|dob|d\.o\.b)\b", re.IGNORECASE)
CUE_CHARS = 48
"""A date is a date of birth when a cue ends at most this many characters before it."""
DATE_CONTENT = re.compile(
    r"\d|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE
)  # "today" and "noon" are dates to spaCy, never a birth date


NOT_NAMES = frozenset(
    {"ssn", "ssns", "iban", "ip", "pin", "dob", "id", "cvv", "visa", "mastercard", "master card", "american express",
     "amex", "discover", "maestro"}
)  # fmt: skip
"""What the English model takes for an organisation or a name but is never personal data: the words that announce
an entity (`my SSN is`), and card networks (`my Visa card`)."""
NAMED = frozenset({RedactionClass.person_name, RedactionClass.location, RedactionClass.organization})


class RedactionUnavailable(InputRejectedError):
    """Classes the text's language cannot be redacted of (a 400 naming them; a job ends with it)."""

    def __init__(self, classes: list[RedactionClass], language: str) -> None:
        names = ", ".join(cls.value for cls in classes)
        super().__init__(f"redact: {names} can be found in English only, and the audio is {language!r}")


@dataclass(frozen=True)
class Entity:
    """One entity in a text: `text[start:end]` is of class `cls`."""

    start: int
    end: int
    cls: RedactionClass


class EntityFinder:
    """The analyzer, loaded once per process (the spaCy model's second and ~60 MB), used by one thread at a time."""

    def __init__(self) -> None:
        from deployments.redaction._recognizers import analyzer

        self._analyzer: AnalyzerEngine = analyzer()
        self._lock = threading.Lock()

    def find(self, text: str, classes: list[RedactionClass], language: str) -> list[Entity]:
        """The entities of `classes` in `text`, in order, not overlapping; `RedactionUnavailable` for a named-entity
        class outside English."""
        if unserved := unserved_classes(classes, language):
            raise RedactionUnavailable(unserved, language)
        wanted = {PRESIDIO_ENTITIES[cls]: cls for cls in PRIORITY if cls in classes}
        if not text.strip():
            return []
        with self._lock:
            results = self._analyzer.analyze(text, language="en", entities=list(wanted), score_threshold=MIN_SCORE)
        found = [
            Entity(result.start, result.end, wanted[result.entity_type])
            for result in results
            if result.entity_type in wanted and _kept(result, text, wanted[result.entity_type])
        ]
        return merged(found)


def _kept(result: "RecognizerResult", text: str, cls: RedactionClass) -> bool:
    if cls in NAMED:
        name = text[result.start : result.end].strip().lower().removesuffix(" card").removesuffix("'s")
        return name not in NOT_NAMES
    if cls != RedactionClass.date_of_birth:
        return True
    date = text[result.start : result.end]
    before = text[max(0, result.start - CUE_CHARS) : result.start]
    return bool(DATE_CONTENT.search(date)) and bool(BIRTH_CUE.search(before))


def merged(entities: list[Entity]) -> list[Entity]:
    """Overlapping entities as one, spanning them all, of the most specific of their classes."""
    spans: list[Entity] = []
    for entity in sorted(entities, key=lambda e: (e.start, -e.end)):
        if spans and entity.start < spans[-1].end:
            last = spans[-1]
            cls = min(last.cls, entity.cls, key=PRIORITY.index)
            spans[-1] = Entity(last.start, max(last.end, entity.end), cls)
        else:
            spans.append(entity)
    return spans


@cache
def shared_finder() -> EntityFinder:
    """The process's finder, loaded on first use (a replica that never redacts never loads spaCy)."""
    return EntityFinder()
