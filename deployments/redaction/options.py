"""What a client asks to have redacted: the entity classes, and how a redacted entity is written."""

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class RedactionClass(StrEnum):
    """The entity classes a transcript can be redacted of (`redact`)."""

    credit_card_number = "credit_card_number"
    us_social_security_number = "us_social_security_number"
    phone_number = "phone_number"
    email_address = "email_address"
    iban = "iban"
    ip_address = "ip_address"
    date_of_birth = "date_of_birth"
    person_name = "person_name"
    location = "location"
    organization = "organization"
    numbers = "numbers"


NAMED_ENTITY_CLASSES = frozenset(
    {RedactionClass.person_name, RedactionClass.location, RedactionClass.organization, RedactionClass.date_of_birth}
)
"""Classes found by the named-entity model (or, for dates of birth, by its dates): English only. The others are
patterns over digits and symbols, the same in every language."""

NER_LANGUAGES = frozenset({"en"})
"""Languages the named-entity classes are served for."""

RedactionMode = Literal["class", "mask", "hash"]


class RedactionOptions(BaseModel):
    """A request's redaction, applied to every place its words appear (text, segments, words, streamed text, the
    analysis' input, live events)."""

    classes: list[RedactionClass] = Field(min_length=1, description="The entity classes to hide.")
    mode: RedactionMode = Field(
        "class",
        description="`class`: `[PERSON_NAME]`; `mask`: each character `*` (or `mask_char`); `hash`: a keyed hash of"
        " the entity, the same for the same entity within one `scope`: `[PERSON_NAME_3f9a1c2b]`.",
    )
    mask_char: str = Field("*", min_length=1, max_length=1, description="mask: the character a redacted one becomes.")
    scope: str = Field("", description="hash: whose tokens these are (the key's owner); another scope's differ.")
    audio: Literal["mp3", "wav"] | None = Field(
        None,
        description="Also write the audio with a tone over every redacted word, in this format (a job's, kept as"
        " long as the job).",
    )

    def needs_named_entities(self) -> bool:
        return any(cls in NAMED_ENTITY_CLASSES for cls in self.classes)


def unserved_classes(classes: list[RedactionClass], language: str | None) -> list[RedactionClass]:
    """The classes `language` cannot be redacted of (named entities outside English); none for an unknown
    language (checked again once it is detected)."""
    if language is None or language in NER_LANGUAGES:
        return []
    return [cls for cls in classes if cls in NAMED_ENTITY_CLASSES]
