"""The `stt` command against the running service: jobs with progress bars (checked in a real terminal,
tmux, by reading the pane), resuming after Ctrl-C, sync mode, the other commands, and errors that print
the server's `detail`."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import srt
from typer.testing import CliRunner

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample
from stt_cli.main import app
from tests.conftest import Service

STT = Path(sys.executable).parent / "stt"


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    samples = decode_audio(pyannote_sample()).samples
    folder = tmp_path_factory.mktemp("clips")
    paths = {
        "hello": folder / "hello.wav",
        "call": folder / "call.flac",
        "long": folder / "long call.flac",  # a space: the CLI must not split names
        "noise": folder / "notes.txt",
    }
    paths["hello"].write_bytes(encode(samples[6 * 16_000 : 13 * 16_000], "wav"))
    paths["call"].write_bytes(encode(samples, "flac"))
    paths["long"].write_bytes(encode(np.tile(samples, 5), "flac"))
    paths["noise"].write_text("not audio at all")
    return paths


def _env(service: Service, tmp_path: Path, api_key: str | None = None) -> dict[str, str]:
    return {
        "STT_BASE_URL": service.base_url,
        "STT_API_KEY": api_key or service.api_key,
        "STT_STATE_FILE": str(tmp_path / "state.json"),
        "COLUMNS": "120",
    }


def test_files_become_jobs_whose_results_are_written_to_out(service: Service, clips: dict, tmp_path: Path) -> None:
    out = tmp_path / "results"
    args = ["transcribe", str(clips["hello"]), str(clips["call"]), "--format", "srt", "--out", str(out)]
    run = CliRunner().invoke(app, args, env=_env(service, tmp_path))
    assert run.exit_code == 0, run.output
    hello = list(srt.parse((out / "hello.srt").read_text()))
    assert "know you were there" in " ".join(cue.content for cue in hello).lower()
    assert len(list(srt.parse((out / "call.srt").read_text()))) > 3
    state = json.loads((tmp_path / "state.json").read_text())
    assert len(state) == 2 and all(job["finished"] for job in state)

    listed = CliRunner().invoke(app, ["jobs"], env=_env(service, tmp_path))
    assert listed.exit_code == 0 and listed.output.count("complete") == 2


def test_sync_diarize_names_an_enrolled_voice_in_json_beside_the_input(
    service: Service, clips: dict, tmp_path: Path
) -> None:
    env = _env(service, tmp_path)
    samples = decode_audio(clips["call"]).samples
    alone = [samples[int(start * 16_000) : int(end * 16_000)] for start, end in ((10.6, 14.4), (18.7, 21.4))]
    (tmp_path / "alice.wav").write_bytes(encode(np.concatenate(alone), "wav"))  # sample.rttm's speaker90 alone
    added = CliRunner().invoke(app, ["voices", "add", "Alice", str(tmp_path / "alice.wav")], env=env)
    assert added.exit_code == 0, added.output
    voice_id = added.output.split()[0]
    assert voice_id.startswith("voice_") and "Alice" in added.output

    source = tmp_path / "call.flac"
    shutil.copy(clips["call"], source)
    run = CliRunner().invoke(app, ["transcribe", str(source), "--sync", "--diarize", "--voice", voice_id], env=env)
    assert run.exit_code == 0, run.output
    result = json.loads((tmp_path / "call.json").read_text())
    speakers = {segment["speaker"] for segment in result["segments"]}
    assert len(speakers) == 2 and "Alice" in speakers  # the other speaker keeps speaker_N

    listed = CliRunner().invoke(app, ["voices", "list"], env=env)
    assert listed.exit_code == 0 and voice_id in listed.output
    removed = CliRunner().invoke(app, ["voices", "rm", voice_id], env=env)
    assert removed.exit_code == 0 and voice_id not in CliRunner().invoke(app, ["voices", "list"], env=env).output


def test_errors_print_the_servers_detail(service: Service, clips: dict, tmp_path: Path) -> None:
    env = _env(service, tmp_path)
    undecodable = CliRunner().invoke(app, ["transcribe", str(clips["noise"])], env=env)
    assert undecodable.exit_code == 1
    assert "not a readable audio or video container" in undecodable.output, undecodable.output

    bad_key = CliRunner().invoke(app, ["models"], env=_env(service, tmp_path, api_key="sk-wrong"))
    assert bad_key.exit_code == 1 and "error 401" in bad_key.output

    no_file = CliRunner().invoke(app, ["transcribe", str(tmp_path / "missing.wav")], env=env)
    assert no_file.exit_code == 2 and "no such file" in no_file.output

    unknown_class = CliRunner().invoke(app, ["transcribe", str(clips["noise"]), "--redact", "passport"], env=env)
    assert unknown_class.exit_code == 1 and "redact: unknown class 'passport'" in unknown_class.output


def test_models_and_balance(service: Service, tmp_path: Path) -> None:
    models = CliRunner().invoke(app, ["models"], env=_env(service, tmp_path))
    assert models.exit_code == 0 and "whisper-1" in models.output
    balance = CliRunner().invoke(app, ["balance"], env=_env(service, tmp_path, api_key="test-key-live"))
    assert balance.exit_code == 0 and "RUB" in balance.output and "per minute" in balance.output


class Pane:
    """A tmux session of its own, 120 columns wide, with the service's address and key in its environment."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        settings = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
        command = ["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "20", *settings, "bash --norc"]
        subprocess.run(command, check=True)

    def type(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def text(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True).stdout

    def wait_for(self, found, timeout_s: float = 120) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if found(text := self.text()):
                return text
            time.sleep(0.2)
        raise AssertionError(f"not seen in {timeout_s} s; the pane shows:\n{self.text()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (Debian package tmux)")
def test_progress_bars_in_a_terminal_and_a_rerun_resumes_after_ctrl_c(
    service: Service, clips: dict, tmp_path: Path
) -> None:
    source = tmp_path / "long call.flac"
    shutil.copy(clips["long"], source)
    pane = Pane(f"stt-{time.monotonic_ns()}", _env(service, tmp_path))
    command = f"{STT} transcribe '{source}' --format vtt"
    try:
        pane.type(command, "Enter")

        def bar_line(text: str) -> str | None:
            return next((row for row in text.splitlines() if row.startswith("long call.flac") and "ETA" in row), None)

        line = bar_line(pane.wait_for(bar_line))
        assert line is not None
        assert "%" in line and any(mark in line for mark in ("━", "─", "╸")), line  # rich draws the bar
        pane.type("C-c")  # interrupted while the job runs on the server
        pane.wait_for(lambda text: "interrupted: the jobs go on" in text)
        state = json.loads((tmp_path / "state.json").read_text())
        assert len(state) == 1 and not state[0]["finished"]

        pane.type(command, "Enter")  # the same command again: waits on the same job, uploads nothing
        pane.wait_for(lambda text: f"resuming long call.flac: job {state[0]['job_id']}" in text)
        pane.wait_for(lambda text: "-> " in text and "100%" in text, timeout_s=180)
    finally:
        pane.close()
    vtt = (tmp_path / "long call.vtt").read_text()
    assert vtt.startswith("WEBVTT") and vtt.count("-->") > 10
    assert len(json.loads((tmp_path / "state.json").read_text())) == 1  # no second job
