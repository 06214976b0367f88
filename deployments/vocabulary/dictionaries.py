"""Named term lists: `medical` ships as data (dictionaries/medical.<language>.txt); operators add theirs in the
config (`vocabulary.dictionaries`: a name -> a term file). A request's vocabulary is resolved here into the one
`Lexicon` both mechanisms use: its own terms first (a client's order is its priority), then the dictionary's."""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from deployments.config import VocabularyConfig
from deployments.errors import InputRejectedError
from deployments.vocabulary.terms import Spelling, Vocabulary

SHIPPED_DIR = Path(__file__).parent / "dictionaries"
"""`<name>.<language>.txt` files: one dictionary per name, its languages' lists together."""
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
CYRILLIC_LANGUAGES = frozenset({"ru", "uk", "be", "bg", "sr", "mk", "kk", "mn", "tg", "ba", "tt"})


def shipped_dictionaries() -> dict[str, tuple[Path, ...]]:
    """The dictionaries that ship with the service, by name."""
    found: dict[str, list[Path]] = {}
    for path in sorted(SHIPPED_DIR.glob("*.txt")):
        found.setdefault(path.name.split(".", 1)[0], []).append(path)
    return {name: tuple(paths) for name, paths in found.items()}


def dictionary_files(config: VocabularyConfig) -> dict[str, tuple[Path, ...]]:
    """Every dictionary a request may name: the shipped ones, and the operator's (which win on a name)."""
    return shipped_dictionaries() | {name: (Path(path).expanduser(),) for name, path in config.dictionaries.items()}


def unknown_dictionary(name: str | None, config: VocabularyConfig) -> str | None:
    """Why `name` cannot be used (for the edge's 400), or None when it can (or none is named)."""
    if name is None:
        return None
    known = dictionary_files(config)
    if name in known:
        return None
    offered = ", ".join(sorted(known)) or "none"
    return f"unknown dictionary {name[:64]!r}: this service offers {offered}"


def read_terms(path: Path) -> tuple[str, ...]:
    """A term file: UTF-8, one term per line; blank lines and `#` comment lines (the list's source) skipped,
    whitespace inside a term made single, repeats dropped."""
    terms: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        term = " ".join(line.split())
        if term and not term.startswith("#"):
            terms.setdefault(term, None)
    return tuple(terms)


@lru_cache(maxsize=16)
def _dictionary_terms(paths: tuple[Path, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(term for path in paths for term in read_terms(path)))


def dictionary_terms(name: str, config: VocabularyConfig) -> tuple[str, ...]:
    """A named dictionary's terms (read once per process); a KeyError for an unknown name."""
    return _dictionary_terms(dictionary_files(config)[name])


def check_dictionaries(config: VocabularyConfig) -> None:
    """Read every dictionary a request may name, once, when a replica starts: an operator's missing or unreadable
    term file stops the deployment with its name and path, instead of failing the first request that names it."""
    for name, paths in dictionary_files(config).items():
        try:
            _dictionary_terms(paths)
        except (OSError, UnicodeDecodeError) as error:
            files = ", ".join(map(str, paths))
            raise ValueError(f"vocabulary.dictionaries[{name!r}]: cannot read {files}: {error}") from error


@dataclass(frozen=True)
class Lexicon:
    """A request's vocabulary resolved: its terms (the client's first, then its dictionary's) and spellings."""

    terms: tuple[str, ...]
    spellings: tuple[Spelling, ...] = ()

    def for_language(self, language: str | None) -> tuple[str, ...]:
        """The terms written in the language's script (Cyrillic or not); all of them when it is unknown."""
        if language is None:
            return self.terms
        cyrillic = language in CYRILLIC_LANGUAGES
        return tuple(term for term in self.terms if bool(_CYRILLIC.search(term)) == cyrillic)


def lexicon(vocabulary: Vocabulary | None, config: VocabularyConfig) -> Lexicon | None:
    """What the mechanisms apply for a request; None when it names nothing."""
    if vocabulary is None or vocabulary.empty:
        return None
    terms = vocabulary.terms
    if (reason := unknown_dictionary(vocabulary.dictionary, config)) is not None:
        raise InputRejectedError(f"dictionary: {reason}")  # the edges check first; a job outliving a config too
    if vocabulary.dictionary is not None:
        terms = tuple(dict.fromkeys((*terms, *dictionary_terms(vocabulary.dictionary, config))))
    return Lexicon(terms, vocabulary.spellings)
