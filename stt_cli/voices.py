"""`stt voices`: enrol speakers once, then name them in every diarized transcript (`stt transcribe --diarize
--voice VOICE_ID`). docs/voices.md."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from stt_cli.terminal import cli_settings, connect, console

voices_app = typer.Typer(help="Enrolled voices: add, list, rm.", no_args_is_help=True)


@voices_app.command("add")
def add_voice(
    name: Annotated[str, typer.Argument(help="The speaker's name, as transcripts will show it.")],
    clip: Annotated[Path, typer.Argument(help="3 to 60 s of the speaker talking alone (any audio format).")],
) -> None:
    """Enrol a voice; its id names the speaker in requests (`voices`)."""
    with connect(cli_settings()) as api:
        voice = api.add_voice(name, clip)
    console.print(f"{voice.id}  {voice.name}  ({voice.speech_s:.1f} s of speech)")


@voices_app.command("list")
def list_voices() -> None:
    """This key's voices."""
    table = Table("id", "name", "speech", "enrolled", pad_edge=False)
    with connect(cli_settings()) as api:
        for voice in api.voices():
            enrolled = datetime.fromtimestamp(voice.created_at, UTC).strftime("%Y-%m-%d %H:%M")
            table.add_row(voice.id, voice.name, f"{voice.speech_s:.1f} s", enrolled)
    console.print(table)


@voices_app.command("rm")
def remove_voice(voice_id: Annotated[str, typer.Argument(help="The voice's id (`stt voices list`).")]) -> None:
    """Delete a voice: its embedding is gone; requests naming it are refused."""
    with connect(cli_settings()) as api:
        api.remove_voice(voice_id)
    console.print(f"{voice_id}: deleted")
