"""A request's `Redactor`, from its options and the process's finder and hash key (each made once per process)."""

from functools import cache

from deployments.config import RedactionConfig
from deployments.redaction.finder import shared_finder
from deployments.redaction.options import RedactionOptions
from deployments.redaction.redactor import Redactor


@cache
def _hash_key(secret_env: str, secret_file: str | None) -> bytes:
    return RedactionConfig(secret_env=secret_env, secret_file=secret_file).hash_key()


def redactor_for(options: RedactionOptions | None, config: RedactionConfig) -> Redactor | None:
    """None when nothing is to be redacted; the finder loads on the first request that redacts."""
    if options is None:
        return None
    key = _hash_key(config.secret_env, config.secret_file) if options.mode == "hash" else b""
    return Redactor(options, shared_finder(), key)
