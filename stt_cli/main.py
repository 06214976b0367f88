"""`stt`: transcribe files and URLs with the service from a terminal; serve Home Assistant (Wyoming).

export STT_BASE_URL=http://127.0.0.1:8000 STT_API_KEY=sk-...
stt transcribe meeting.mp3 call.wav --format srt --diarize
stt jobs | stt models | stt balance
stt wyoming --uri tcp://0.0.0.0:10300
stt batch recordings/ transcripts/ --response-format srt   (Ray Data, no service: docs/batch.md)
stt voices add "Dr. Ivanova" clip.wav | list | rm VOICE_ID   (then: stt transcribe visit.mp3 --diarize --voice VOICE_ID)
STT_ADMIN_KEY=... stt admin keys create "team a" --balance 10 | list | credit KEY_ID 5 | revoke KEY_ID
"""

import asyncio
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlparse

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Column, Table

from stt_cli.api import AdminApi, ApiError, SttApi, is_url
from stt_cli.settings import AdminCliSettings, CliSettings
from stt_cli.state import JobStateFile, SubmittedJob
from stt_cli.terminal import cli_settings, connect, console, errors, exiting_on_errors
from stt_cli.voices import voices_app
from stt_cli.wire import ResponseFormat

app = typer.Typer(help="Speech-to-text from the terminal: files and URLs in, transcripts out.", no_args_is_help=True)

EXTENSIONS = {"text": "txt", "json": "json", "verbose_json": "json", "srt": "srt", "vtt": "vtt"}
POLL_INTERVAL_S = 1.0


class WyomingTransport(StrEnum):
    """How `stt wyoming` sends an utterance (docs/api/wyoming.md says why live is the default)."""

    live = "live"
    rest = "rest"


def _output_path(source: str, extension: str, out_dir: Path | None) -> Path:
    """Next to a local input (or in `--out`); a URL's result goes to `--out` or the current directory."""
    if is_url(source):
        name = Path(urlparse(source).path).stem or "transcript"
        return (out_dir or Path.cwd()) / f"{name}.{extension}"
    path = Path(source)
    return (out_dir or path.parent) / f"{path.stem}.{extension}"


def _write(path: Path, result: str | dict[str, Any] | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


@app.command()
def transcribe(
    sources: Annotated[list[str], typer.Argument(help="Audio or video files, or http(s) URLs.", metavar="FILE_OR_URL")],
    response_format: Annotated[ResponseFormat, typer.Option("--format", "-f", help="Output format.")] = (
        ResponseFormat.text
    ),
    diarize: Annotated[bool, typer.Option(help="Who spoke when: results are JSON with speakers.")] = False,
    voice: Annotated[
        list[str] | None,
        typer.Option(
            help="With --diarize: an enrolled voice's id (`stt voices list`) that names its speaker; repeat it."
        ),
    ] = None,
    language: Annotated[str | None, typer.Option(help="ISO 639-1 code, e.g. en; detected when left out.")] = None,
    redact: Annotated[
        list[str] | None,
        typer.Option(help="An entity class to hide (person_name, phone_number, credit_card_number, ...); repeat it."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory for results (default: beside inputs).")
    ] = None,
    sync: Annotated[bool, typer.Option(help="Wait for each answer in one request instead of as a job.")] = False,
) -> None:
    """Transcribe files and URLs, as jobs by default (all at once, with progress); results are written beside
    the inputs. Interrupted? Run the same command again: it waits on the jobs already submitted."""
    settings = cli_settings()
    missing = [source for source in sources if not is_url(source) and not Path(source).is_file()]
    if missing:
        errors.print(f"[red]error:[/] no such file: {', '.join(missing)}")
        raise typer.Exit(2)
    form = {"response_format": response_format.value}
    if diarize:
        form["task"] = "diarize"
    if voice:
        form["voices"] = ",".join(voice)
    if language:
        form["language"] = language
    if redact:
        form["redact"] = ",".join(redact)
    extension = "json" if diarize else EXTENSIONS[response_format.value]
    sources = [source if is_url(source) else str(Path(source).resolve()) for source in sources]
    outputs = {source: _output_path(source, extension, out) for source in sources}
    with connect(settings) as api:
        if sync:
            failed = _transcribe_sync(api, sources, form, outputs)
        else:
            failed = _transcribe_as_jobs(api, settings, sources, form, outputs)
    if failed:
        raise typer.Exit(1)


def _transcribe_sync(api: SttApi, sources: list[str], form: dict[str, str], outputs: dict[str, Path]) -> int:
    failed = 0
    for source in sources:
        with console.status(f"transcribing {_name(source)}"):
            try:
                _write(outputs[source], api.transcribe(source, form))
            except ApiError as error:
                errors.print(f"[red]{_name(source)}:[/] {error.detail}")
                failed += 1
                continue
        console.print(f"[green]done[/] {_name(source)} -> {outputs[source]}")
    return failed


def _transcribe_as_jobs(
    api: SttApi, settings: CliSettings, sources: list[str], form: dict[str, str], outputs: dict[str, Path]
) -> int:
    state = JobStateFile(settings.state_file)
    jobs: dict[str, SubmittedJob] = {}
    failed = 0
    for source in sources:
        output = str(outputs[source])
        earlier = state.find(settings.base_url, source, form, output)
        if earlier is not None:
            console.print(f"resuming {_name(source)}: job {earlier.job_id}")
            jobs[source] = earlier
            continue
        try:
            created = api.submit(source, form)
        except ApiError as error:
            errors.print(f"[red]{_name(source)}:[/] {error.detail}")
            failed += 1
            continue
        job = SubmittedJob(
            job_id=created.job_id, base_url=settings.base_url, source=source, form=form, output=output,
            submitted_at=time.time(),
        )  # fmt: skip
        state.add(job)
        jobs[source] = job
    try:
        return failed + _wait_for_jobs(api, state, jobs)
    except KeyboardInterrupt:
        errors.print("interrupted: the jobs go on at the service; run the same command again to wait for them")
        raise typer.Exit(130) from None


def _wait_for_jobs(api: SttApi, state: JobStateFile, jobs: dict[str, SubmittedJob]) -> int:
    """One progress bar per job, from the job's `progress`, with rich's ETA from the rate it rises at."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
    )
    failed = 0
    with Progress(*columns, console=console) as progress:
        bars: dict[str, TaskID] = {
            source: progress.add_task(_name(source), total=1.0, status="queued") for source in jobs
        }
        waiting = dict(jobs)
        while waiting:
            for source, job in list(waiting.items()):
                try:
                    polled = api.job(job.job_id)
                except ApiError as error:
                    if error.status != 404:
                        raise
                    progress.update(bars[source], status="[red]gone (older than 12 h?)")
                    errors.print(f"[red]{_name(source)}:[/] {error.detail}")
                    state.mark_finished(job.job_id)
                    failed += 1
                    del waiting[source]
                    continue
                if polled.status == "in_progress":
                    progress.update(bars[source], completed=polled.progress, status="running")
                    continue
                del waiting[source]
                state.mark_finished(job.job_id)
                if polled.status == "error":
                    progress.update(bars[source], status="[red]failed")
                    errors.print(f"[red]{_name(source)}:[/] {polled.error}")
                    failed += 1
                else:
                    _write(Path(job.output), polled.result)
                    progress.update(bars[source], completed=1.0, status=f"[green]-> {job.output}")
            if waiting:
                time.sleep(POLL_INTERVAL_S)
    return failed


@app.command()
def jobs() -> None:
    """The jobs this CLI submitted in the last 12 hours, with their state now."""
    settings = cli_settings()
    table = Table("job", "input", "status", "progress", "result")
    with connect(settings) as api:
        for job in JobStateFile(settings.state_file).load():
            if job.base_url != settings.base_url:
                continue
            status: str
            try:
                polled = api.job(job.job_id)
                status, share = polled.status, f"{polled.progress:.0%}"
            except ApiError as error:
                status, share = f"gone ({error.status})", ""
            table.add_row(job.job_id, _name(job.source), status, share, job.output if job.finished else "")
    console.print(table)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def batch(context: typer.Context) -> None:
    """Transcribe a folder, prefix or manifest on Ray Data, without the service (INPUT OUTPUT [options]; --help
    for them). It runs `python -m serve_app.batch` of an installation with the server, so this CLI stays a light
    HTTP client (docs/batch.md)."""
    if importlib.util.find_spec("serve_app") is None:
        errors.print("[red]error:[/] stt batch runs the service's engines: install the server, not the CLI alone")
        raise typer.Exit(2)
    raise typer.Exit(subprocess.call([sys.executable, "-m", "serve_app.batch", *context.args]))


@app.command()
def models() -> None:
    """The model ids the service accepts."""
    with connect(cli_settings()) as api:
        listed = api.models()
    table = Table("model", "owned by")
    for model in listed.data:
        table.add_row(model.id, model.owned_by)
    console.print(table)


@app.command()
def balance() -> None:
    """What is left to spend on this key, and its price per minute of audio."""
    with connect(cli_settings()) as api:
        funds = api.balance()
    if funds.unlimited:
        console.print(f"unlimited key: {-funds.balance:.4f} {funds.currency} used, {funds.rate_per_min} per minute")
    else:
        console.print(
            f"balance: {funds.balance:.4f} {funds.currency} ({funds.rate_per_min} {funds.currency} per minute)"
        )


@app.command()
def wyoming(
    uri: Annotated[str, typer.Option(help="Where to listen: tcp://HOST:PORT, unix://PATH or stdio://.")] = (
        "tcp://0.0.0.0:10300"
    ),
    language: Annotated[
        list[str] | None,
        typer.Option(help="A language the models take (repeat it); default: Whisper's. E.g. en for *.en models."),
    ] = None,
    streaming: Annotated[bool, typer.Option(help="Send transcript-chunk events as the text arrives.")] = True,
    max_seconds: Annotated[float, typer.Option(help="The longest utterance accepted, in seconds.")] = 300,
    transport: Annotated[
        WyomingTransport,
        typer.Option(help="live: a realtime session streamed as the user speaks; rest: one upload at audio-stop."),
    ] = WyomingTransport.live,
) -> None:
    """A Wyoming speech-to-text server for Home Assistant, transcribing with the service (STT_BASE_URL,
    STT_API_KEY)."""
    from stt_cli.wyoming.languages import WHISPER_LANGUAGES
    from stt_cli.wyoming.server import serve  # the wyoming package loads only for this command
    from stt_cli.wyoming.service import Service

    settings = cli_settings()
    with connect(settings) as api:
        models = [model.id for model in api.models().data]
    service = Service(settings.base_url, settings.api_key.get_secret_value())
    errors.print(f"Wyoming speech-to-text at {uri} ({transport}): models {', '.join(models)} at {settings.base_url}")
    languages = language or list(WHISPER_LANGUAGES)
    with suppress(KeyboardInterrupt):  # Ctrl-C stops the server
        asyncio.run(serve(uri, service, languages, streaming, max_seconds, models,
                          "live" if transport is WyomingTransport.live else "rest"))  # fmt: skip


admin_app = typer.Typer(
    help="Manage the service with an admin key (STT_ADMIN_KEYS on the server).", no_args_is_help=True
)
keys_app = typer.Typer(help="API keys: create, list, credit, revoke.", no_args_is_help=True)
admin_app.add_typer(keys_app, name="keys")
app.add_typer(admin_app, name="admin")
app.add_typer(voices_app, name="voices")

AdminKeyOption = Annotated[
    str | None, typer.Option("--admin-key", help="An admin key; default: $STT_ADMIN_KEY.", show_default=False)
]


@keys_app.command("create")
def create_key(
    name: Annotated[str, typer.Argument(help="Who the key is for.")],
    balance: Annotated[float | None, typer.Option(help="Money it may spend; left out: unlimited.")] = None,
    rate_per_min: Annotated[float | None, typer.Option(help="Its price of an audio minute.")] = None,
    currency: Annotated[str | None, typer.Option(help="EUR or RUB.")] = None,
    requests_per_second: Annotated[float | None, typer.Option(help="Its request rate.")] = None,
    max_running_jobs: Annotated[int | None, typer.Option(help="Its cap on running jobs.")] = None,
    admin_key: AdminKeyOption = None,
) -> None:
    """Make a key. It is printed once, here: the service keeps only its hash."""
    settings = {"name": name, "balance": balance, "rate_per_min": rate_per_min, "currency": currency,
                "requests_per_second": requests_per_second, "max_running_jobs": max_running_jobs}  # fmt: skip
    with admin_connect(admin_key) as api:
        made = api.create_key({field: value for field, value in settings.items() if value is not None})
    errors.print(f"created {made.id} ({made.name}); the key is shown this once:")
    console.print(made.key, soft_wrap=True)


@keys_app.command("list")
def list_keys(admin_key: AdminKeyOption = None) -> None:
    """Every key, static ones (from the server's environment or keys file) first; never a secret."""
    table = Table(Column("id", min_width=20), "name", "prefix", "left", "balance", "/min", "state", pad_edge=False)
    with admin_connect(admin_key) as api:
        for key in api.list_keys():
            left, initial = key.balance.remaining, key.balance.initial
            state = "static" if key.static else ("revoked" if key.revoked_at else "active")
            table.add_row(key.id, key.name, key.prefix or "", "unlimited" if left is None else f"{left:.4f}",
                          "" if initial is None else f"{initial:.4f} {key.balance.currency}",
                          f"{key.rate_per_min}", state)  # fmt: skip
    console.print(table)


@keys_app.command("credit")
def credit_key(
    key_id: Annotated[str, typer.Argument(help="The key's id (`stt admin keys list`).")],
    amount: Annotated[float, typer.Argument(help="Money to add, in the key's currency.")],
    note: Annotated[str | None, typer.Option(help="Kept in the audit trail.")] = None,
    admin_key: AdminKeyOption = None,
) -> None:
    """Top a key's balance up."""
    with admin_connect(admin_key) as api:
        credited = api.credit(key_id, amount, note)
    console.print(f"{credited.id}: balance {credited.balance.remaining:.4f} {credited.balance.currency}")


@keys_app.command("revoke")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key's id (`stt admin keys list`).")],
    admin_key: AdminKeyOption = None,
) -> None:
    """Revoke a key: within about a second the service refuses it everywhere."""
    with admin_connect(admin_key) as api:
        api.revoke(key_id)
    console.print(f"{key_id}: revoked")


@contextmanager
def admin_connect(admin_key: str | None) -> Iterator[AdminApi]:
    """The admin API's client; errors as `connect`'s."""
    settings = AdminCliSettings()
    key = admin_key or (settings.admin_key.get_secret_value() if settings.admin_key else None)
    if not key:
        errors.print("[red]error:[/] set STT_ADMIN_KEY or pass --admin-key")
        raise typer.Exit(2)
    with exiting_on_errors(settings.base_url), AdminApi(settings.base_url, key) as api:
        yield api


def _name(source: str) -> str:
    return source if is_url(source) else Path(source).name


if __name__ == "__main__":
    app()
