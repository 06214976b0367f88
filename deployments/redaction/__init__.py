"""Redaction: personal data (card numbers, SSNs, phone numbers, e-mail addresses, IBANs, IP addresses, dates of
birth, names, places, organisations, or any number) hidden in transcripts before anything is stored or sent.

`options` is what a request asks (`RedactionOptions`, on `TranscriptionOptions.redaction`), `finder` where the
entities are (Presidio and spaCy's English model), `redactor` a transcript or text with them replaced, `live` the
streaming form (`deployments/live/_redaction.py`) holds back words while an entity may still be forming."""

from deployments.redaction.options import (
    NAMED_ENTITY_CLASSES,
    RedactionClass,
    RedactionMode,
    RedactionOptions,
    unserved_classes,
)

__all__ = ["NAMED_ENTITY_CLASSES", "RedactionClass", "RedactionMode", "RedactionOptions", "unserved_classes"]
