"""Domain vocabulary (issue 48): the terms a recording will contain, as a client's list or a named dictionary,
applied by two mechanisms: decoding bias (the terms in Whisper's prompt) and correction after decoding."""

from deployments.vocabulary.dictionaries import unknown_dictionary
from deployments.vocabulary.terms import MAX_TERM_CHARS, MAX_TERM_WORDS, MAX_TERMS, Spelling, Vocabulary, split_terms

__all__ = [
    "MAX_TERMS",
    "MAX_TERM_CHARS",
    "MAX_TERM_WORDS",
    "Spelling",
    "Vocabulary",
    "split_terms",
    "unknown_dictionary",
]
