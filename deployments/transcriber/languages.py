"""Whisper's languages, code -> name (`en` -> `english`), from transformers' Whisper tokenizer.

Read on first use: importing transformers takes over a second, which the process that builds the
application and every Ingress replica would otherwise spend before serving anything.
"""

from functools import cache


@cache
def whisper_language_names() -> dict[str, str]:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES  # here, not at the top: see the docstring

    return dict(LANGUAGES)


def is_whisper_language(code: str) -> bool:
    return code in whisper_language_names()


def language_name(code: str) -> str:
    """The name OpenAI's verbose_json gives a language; the code itself if Whisper has none."""
    return whisper_language_names().get(code, code)
