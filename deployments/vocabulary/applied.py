"""One request's vocabulary as the pipeline and a live channel apply it: the prompt each reading gets
(`prompt.py`), and the correction of the words written (`correction.py`), per language."""

from collections.abc import Callable
from functools import lru_cache

from deployments.config import VocabularyConfig
from deployments.types import ChunkTranscript, Word
from deployments.vocabulary.correction import Corrector, Item, apply, correct_chunk, correct_words
from deployments.vocabulary.dictionaries import Lexicon, lexicon
from deployments.vocabulary.prompt import biasing_prompt, choose_terms, echoes, fits
from deployments.vocabulary.terms import Spelling, Vocabulary


class AppliedVocabulary:
    """The two mechanisms for one request or session. The prompt needs no first reading when all the terms
    fit Whisper's prompt budget (a client's list, mostly); otherwise each chunk is read once without them and
    again with the terms that sound like words of that reading (`second_prompt`)."""

    def __init__(self, lexicon: Lexicon, config: VocabularyConfig, client_prompt: str | None) -> None:
        self.lexicon = lexicon
        self.config = config
        self.client_prompt = client_prompt
        self._correctors: dict[str | None, Corrector] = {}

    @classmethod
    def of(
        cls, vocabulary: Vocabulary | None, config: VocabularyConfig, client_prompt: str | None
    ) -> "AppliedVocabulary | None":
        """None when the request names no vocabulary."""
        resolved = lexicon(vocabulary, config)
        return None if resolved is None else cls(resolved, config, client_prompt)

    def fits(self, language: str | None) -> bool:
        """Whether all the terms go into the prompt of the first reading (no second one is needed)."""
        return fits(self.lexicon.for_language(language), self.config.prompt_tokens)

    def first_prompt(self, language: str | None) -> str | None:
        """The prompt of a first reading: the terms when they all fit, else the client's prompt alone."""
        if not self.fits(language):
            return self.client_prompt
        return biasing_prompt(self.lexicon.for_language(language), self.client_prompt)

    def second_prompt(self, reading: ChunkTranscript) -> str | None:
        """The prompt of a second reading of a chunk read first without the terms: the terms that sound like its
        words, or None when none does (the first reading then stands)."""
        terms = self.lexicon.for_language(reading.language)
        text = " ".join(segment.text for segment in reading.segments)
        chosen = choose_terms(terms, text, self.config.prompt_tokens)
        return biasing_prompt(chosen, self.client_prompt) if chosen else None

    def keeps(self, first: ChunkTranscript, second: ChunkTranscript) -> bool:
        """Whether a second reading (with the terms) stands, or echoes its prompt (`echoes`) and the first does."""
        text = " ".join(segment.text for segment in second.segments)
        first_text = " ".join(segment.text for segment in first.segments)
        return not echoes(text, first_text, self.lexicon.for_language(second.language))

    def prompt_for(self, language: str | None, recent_text: str) -> str | None:
        """A live reading's prompt: all the terms if they fit, else those like words of the session's recent text."""
        if self.fits(language):
            return self.first_prompt(language)
        chosen = choose_terms(self.lexicon.for_language(language), recent_text, self.config.prompt_tokens)
        return biasing_prompt(chosen, self.client_prompt)

    def corrector(self, language: str | None) -> Corrector | None:
        if not self.config.correction:
            return None
        if language not in self._correctors:
            terms = self.lexicon.for_language(language)
            self._correctors[language] = _corrector(terms, self.lexicon.spellings, self.config.correction_threshold)
        return self._correctors[language]

    def correct(self, transcript: ChunkTranscript) -> ChunkTranscript:
        corrector = self.corrector(transcript.language)
        return transcript if corrector is None else correct_chunk(corrector, transcript)

    def correct_words(self, words: list[Word], language: str | None) -> list[Word]:
        corrector = self.corrector(language)
        return words if corrector is None else correct_words(corrector, words)

    def correct_items(
        self, items: list[Item], texts: list[str], merge: Callable[[Item, Item, str], Item], language: str | None
    ) -> list[Item]:
        """Any words (a live channel's), given their texts and how to merge a run into one."""
        corrector = self.corrector(language)
        return items if corrector is None else apply(items, corrector.replacements(texts), merge)


@lru_cache(maxsize=32)
def _corrector(terms: tuple[str, ...], spellings: tuple[Spelling, ...], threshold: float) -> Corrector:
    """A dictionary's corrector is built once per process and language, not per request."""
    return Corrector(terms, spellings, threshold)
