"""The other protocols' vocabulary fields (Deepgram `keyterm`, AssemblyAI `word_boost`, nexara `hotwords`, ...)
as the service's one `Vocabulary`. A limit broken is a `VocabularyRefused` whose message names the client's own
field, so that each edge answers it in its protocol's error shape."""

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from deployments.vocabulary import MAX_TERM_CHARS, MAX_TERMS, Spelling, Vocabulary, split_terms


class VocabularyRefused(ValueError):
    """A vocabulary field the service cannot take; the message starts with the field's name."""


def vocabulary_from(
    terms: Mapping[str, Sequence[str]],
    *,
    dictionary: str | None = None,
    spellings: Sequence[Spelling] = (),
    spellings_field: str = "spellings",
) -> Vocabulary | None:
    """One request's terms (by the field that carried them, in priority order), dictionary and spellings;
    None when it names nothing."""
    for name, values in terms.items():
        if len(values) > MAX_TERMS:
            raise VocabularyRefused(f"{name}: at most {MAX_TERMS} terms; got {len(values)}")
        _checked(name, terms=tuple(values))
    every = [term for values in terms.values() for term in values]
    named = [name for name, values in terms.items() if values]
    if len(every) > MAX_TERMS:
        raise VocabularyRefused(f"{' and '.join(named)}: at most {MAX_TERMS} terms in all; got {len(every)}")
    if len(spellings) > MAX_TERMS:
        raise VocabularyRefused(f"{spellings_field}: at most {MAX_TERMS} spellings; got {len(spellings)}")
    vocabulary = _checked(
        " and ".join(named) or "vocabulary", terms=tuple(every), dictionary=dictionary, spellings=tuple(spellings)
    )
    return None if vocabulary.empty else vocabulary


NO_DICTIONARY = frozenset({"", "none", "null", "false"})
"""`dictionary` values that ask for none (the nexara SDK's `None` may arrive as `none`)."""


def dictionary_name(dictionary: str | None) -> str | None:
    """A `dictionary` field's name, or None where it asks for none; a field validator's body on every protocol."""
    if dictionary is None or dictionary.strip().lower() in NO_DICTIONARY:
        return None
    return dictionary.strip()


def hotword_terms(hotwords: list[str]) -> list[str]:
    """A field validator's body for a `hotwords` list (repeated or comma-separated values): the terms, or a
    ValueError that pydantic reports under the field's own name."""
    terms = split_terms(hotwords)
    try:
        vocabulary_from({"hotwords": terms})
    except VocabularyRefused as refused:
        raise ValueError(str(refused).removeprefix("hotwords: ")) from None
    return terms


def _checked(field: str, **values: Any) -> Vocabulary:
    """A Vocabulary of `values`, its validation error a VocabularyRefused naming the client's `field`."""
    try:
        return Vocabulary(**values)
    except ValidationError as error:
        message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        raise VocabularyRefused(f"{field}: {message}") from None


def spelling_from(field: str, heard: Sequence[str], written: str) -> Spelling:
    """One spelling: the words the model may write (`heard`), and the term as it should be written."""
    heard = [" ".join(words.split()) for words in heard]
    if not heard or not all(heard) or not written.strip():
        raise VocabularyRefused(f"{field}: each spelling needs words to replace and what to write instead")
    if max(len(words) for words in (*heard, written)) > MAX_TERM_CHARS:
        raise VocabularyRefused(f"{field}: a spelling's words are at most {MAX_TERM_CHARS} characters")
    return Spelling(heard=tuple(heard), written=written.strip())
