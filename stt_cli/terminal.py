"""What every `stt` command shares: the consoles, the settings from the environment, and the API client whose
errors print the server's `detail` and exit."""

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console

from stt_cli.api import ApiError, SttApi
from stt_cli.settings import CliSettings

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # a message stays one line: grep and logs read it whole


def cli_settings() -> CliSettings:
    try:
        return CliSettings()
    except ValidationError:
        errors.print("[red]error:[/] set STT_API_KEY (and STT_BASE_URL, default http://127.0.0.1:8000)")
        raise typer.Exit(2) from None


@contextmanager
def connect(settings: CliSettings) -> Iterator[SttApi]:
    """The API client for one command. A server error prints its `detail` and exits 1, as does a service
    that cannot be reached."""
    with exiting_on_errors(settings.base_url), SttApi(settings.base_url, settings.api_key.get_secret_value()) as api:
        yield api


@contextmanager
def exiting_on_errors(base_url: str) -> Iterator[None]:
    """A server error prints its `detail` and exits 1, as does a service that cannot be reached."""
    try:
        yield
    except ApiError as error:
        errors.print(f"[red]error {error.status}:[/] {error.detail}")
        raise typer.Exit(1) from None
    except httpx.TransportError as error:
        errors.print(f"[red]error:[/] cannot reach {base_url} ({error}); check STT_BASE_URL")
        raise typer.Exit(1) from None
