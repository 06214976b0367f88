"""The CLI's settings, from the environment (read once, when a command starts)."""

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_state_file() -> Path:
    return Path.home() / ".local" / "state" / "stt" / "jobs.json"


class CliSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STT_")

    base_url: str = Field("http://127.0.0.1:8000", description="STT_BASE_URL: where the service answers.")
    api_key: SecretStr = Field(description="STT_API_KEY: the Bearer key (never passed on the command line).")
    state_file: Path = Field(
        default_factory=_default_state_file,
        description="STT_STATE_FILE: the jobs this CLI submitted, so that a re-run waits on them instead of"
        " submitting again.",
    )


class AdminCliSettings(BaseSettings):
    """`stt admin`'s settings: an admin key instead of an API key."""

    model_config = SettingsConfigDict(env_prefix="STT_")

    base_url: str = Field("http://127.0.0.1:8000", description="STT_BASE_URL: where the service answers.")
    admin_key: SecretStr | None = Field(None, description="STT_ADMIN_KEY: an admin key (or `--admin-key`).")
