"""Redaction (`redaction:`): where the key of `redact_mode=hash` comes from."""

import os
import secrets
from pathlib import Path

from pydantic import Field

from deployments.config.base import StrictModel


class RedactionConfig(StrictModel):
    """`redact_mode=hash` writes an entity as a keyed hash (HMAC-SHA256) of it, so that the same name gives the same
    token within one API key's transcripts. The key is a secret: from the environment, or made once and kept in a
    file under `storage.state_dir` (one machine; on a cluster whose nodes do not share it, set the variable)."""

    secret_env: str = Field(
        "STT_REDACTION_SECRET", description="The environment variable holding the hash key (any string)."
    )
    secret_file: str | None = Field(
        None,
        description="Where a key is made and kept when the variable is unset; None: `redaction.secret` under"
        " storage.state_dir (the application builder fills it in).",
    )

    def hash_key(self) -> bytes:
        """The key, read here, by the process that hashes (once per replica): the variable, else the file (made
        with a random key, readable by its owner only, when missing)."""
        value = os.environ.get(self.secret_env)
        if value:
            return value.encode()
        if self.secret_file is None:
            raise RuntimeError(f"redaction: set {self.secret_env} or redaction.secret_file")
        path = Path(self.secret_file).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_bytes().strip()
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32))
        return path.read_bytes().strip()
