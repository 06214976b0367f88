"""What a client says a recording will contain: its own terms (hotwords, keyterms, word boosts), a named
dictionary, and spellings. One value for every protocol; the edges only translate their fields into it."""

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_TERMS = 200
"""The most terms a request may name (Deepgram allows 100 keyterms, AssemblyAI 1000 boosted words; Whisper's
prompt holds about 220 tokens, so the biasing step chooses among many)."""
MAX_TERM_CHARS = 64
MAX_TERM_WORDS = 6
"""A term is a word or a short phrase (AssemblyAI's limit for a boosted phrase)."""


class Spelling(BaseModel):
    """Words the model may write for a term, and how the term is written (AssemblyAI's `custom_spelling`)."""

    model_config = ConfigDict(frozen=True)

    heard: tuple[str, ...] = Field(min_length=1, description="What the model may write, e.g. `sequel`.")
    written: str = Field(min_length=1, max_length=MAX_TERM_CHARS, description="What to write instead, e.g. `SQL`.")


class Vocabulary(BaseModel):
    """The terms one request or live session expects. Used twice (deployments/vocabulary/): as Whisper's
    prompt, which biases decoding towards them, and after decoding, where a word that sounds like a term but
    is written otherwise takes the term's spelling."""

    model_config = ConfigDict(frozen=True)

    terms: tuple[str, ...] = Field(
        (), max_length=MAX_TERMS, description="Words or short phrases, as they should be written."
    )
    dictionary: str | None = Field(
        None, description="A named term list: `medical` ships with the service; operators add theirs in the config."
    )
    spellings: tuple[Spelling, ...] = Field((), max_length=MAX_TERMS)

    @field_validator("terms")
    @classmethod
    def terms_are_short_phrases(cls, terms: tuple[str, ...]) -> tuple[str, ...]:
        cleaned: list[str] = []
        for term in terms:
            term = " ".join(term.split())
            if not term:
                raise ValueError("a term is empty")
            if not any(char.isalnum() for char in term):
                raise ValueError(f"term {term[:MAX_TERM_CHARS]!r} has no letter or digit")
            if len(term) > MAX_TERM_CHARS or len(term.split()) > MAX_TERM_WORDS:
                raise ValueError(
                    f"term {term[:MAX_TERM_CHARS]!r} is too long: at most {MAX_TERM_WORDS} words and"
                    f" {MAX_TERM_CHARS} characters"
                )
            if term not in cleaned:
                cleaned.append(term)
        return tuple(cleaned)

    @property
    def empty(self) -> bool:
        return not self.terms and self.dictionary is None and not self.spellings


def split_terms(values: list[str]) -> list[str]:
    """Terms as form fields carry them: repeated fields, or one comma-separated value (or both)."""
    return [term.strip() for value in values for term in value.split(",") if term.strip()]
