"""The batch's parts without Ray: listing inputs and manifests, the plan read as the transcription form reads it,
atomic outputs and markers, what a rerun skips, and the rendering (the REST API's)."""

import json
from pathlib import Path

import pytest

from deployments.batch.inputs import list_inputs
from deployments.batch.outputs import MANIFEST, OutputFolder
from deployments.batch.resume import pending
from deployments.batch.run import BatchSettings
from deployments.batch.tasks import FileTask, Outcome
from deployments.types import Segment, Transcript, TranscriptionOptions, Word
from serve_app.batch.__main__ import engines
from serve_app.batch.__main__ import main as batch_main
from serve_app.batch.plan import PlanError, batch_vocabulary, plan, plan_each
from serve_app.batch.render import render

ROOT = Path(__file__).resolve().parents[1]


def _files(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x")


def test_a_folder_lists_its_files_with_their_output_names_leaving_hidden_and_underscored_out(tmp_path: Path) -> None:
    _files(tmp_path, "b.wav", "a.mp3", "calls/c.flac", ".hidden.wav", "_out/_manifest.jsonl", "_out/x.json")
    listed = list_inputs(str(tmp_path))
    assert [(item.name, Path(item.source).name) for item in listed] == [
        ("a", "a.mp3"),
        ("b", "b.wav"),
        ("calls/c", "c.flac"),
    ]


def test_a_glob_and_a_single_file(tmp_path: Path) -> None:
    _files(tmp_path, "a.wav", "b.mp3", "c.wav", "_d.wav", "_out/e.wav")
    assert [item.name for item in list_inputs(str(tmp_path / "*.wav"))] == ["a", "c"]
    assert [item.name for item in list_inputs(str(tmp_path / "**" / "*.wav"))] == ["a", "c"]
    assert [item.name for item in list_inputs(str(tmp_path / "b.mp3"))] == ["b"]
    with pytest.raises(FileNotFoundError):
        list_inputs(str(tmp_path / "missing"))


def test_a_manifest_reads_paths_beside_it_urls_and_per_row_choices(tmp_path: Path) -> None:
    (tmp_path / "list.jsonl").write_text(
        '{"path": "a.wav", "language": "fr"}\n{"url": "https://example.com/x/y.mp3?sig=1", "task": "diarize",'
        ' "num_speakers": 2}\n{"path": "/abs/b.wav", "id": "named"}\n'
    )
    listed = list_inputs(str(tmp_path / "list.jsonl"))
    assert [(item.source, item.name, item.overrides) for item in listed] == [
        (str(tmp_path / "a.wav"), "a", {"language": "fr"}),
        ("https://example.com/x/y.mp3?sig=1", "y", {"task": "diarize", "num_speakers": 2}),
        ("/abs/b.wav", "named", {}),
    ]


def test_a_manifest_refuses_unknown_columns_and_repeated_names(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("path,speed\na.wav,2\n")
    with pytest.raises(ValueError, match="unknown columns \\['speed'\\]"):
        list_inputs(str(tmp_path / "a.csv"))
    (tmp_path / "b.csv").write_text("path\nx/a.wav\ny/a.wav\n")
    with pytest.raises(ValueError, match="repeats"):
        list_inputs(str(tmp_path / "b.csv"))


def test_the_plan_takes_the_forms_options_for_every_format(tmp_path: Path) -> None:
    _files(tmp_path, "a.wav")
    [task] = plan(list_inputs(str(tmp_path)), ["json", "srt"], "transcribe", None, False)
    assert task.options.word_timestamps and task.options.segment_timestamps  # srt's cues need both
    assert set(task.render["formats"]) == {"json", "srt"}
    [text_only] = plan(list_inputs(str(tmp_path)), ["text"], "transcribe", "EN", False)
    assert not text_only.options.word_timestamps and not text_only.options.segment_timestamps
    assert text_only.options.language == "en"
    [diarized] = plan(list_inputs(str(tmp_path)), ["json"], "diarize", None, False)
    assert diarized.diarization is not None


@pytest.mark.parametrize(
    ("task", "language", "refused"),
    [("translate", None, "task 'translate'"), ("transcribe", "klingon", "unsupported language")],
)
def test_the_plan_refuses_what_it_cannot_honour_by_name(tmp_path: Path, task: str, language: str, refused: str) -> None:
    _files(tmp_path, "a.wav")
    with pytest.raises(PlanError, match=refused):
        plan(list_inputs(str(tmp_path)), ["json"], task, language, False)


def test_num_speakers_without_diarize_is_refused(tmp_path: Path) -> None:
    (tmp_path / "list.csv").write_text("path,num_speakers\na.wav,2\n")
    with pytest.raises(PlanError, match="num_speakers requires task=diarize"):
        plan(list_inputs(str(tmp_path / "list.csv")), ["json"], "transcribe", None, False)


def _task(name: str) -> FileTask:
    return FileTask(source=f"/in/{name}.wav", name=name, options=TranscriptionOptions())


def test_outputs_are_renamed_into_place_and_the_marker_comes_last(tmp_path: Path) -> None:
    folder = OutputFolder(str(tmp_path))
    outcome = Outcome(name="calls/a", source="/in/a.wav", status="ok", duration=1.0, language="en")
    folder.finish(outcome, {"calls/a.json": "{}", "calls/a.srt": ""})
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file()) == [
        "_done/calls/a.json",
        "calls/a.json",
        "calls/a.srt",
    ]
    assert folder.markers() == {"calls/a"}
    assert folder.marker("calls/a") == outcome.model_copy(update={"outputs": ["calls/a.json", "calls/a.srt"]})


def test_a_rerun_skips_finished_inputs_and_retries_errors_only_when_asked(tmp_path: Path) -> None:
    folder = OutputFolder(str(tmp_path))
    ok = folder.finish(Outcome(name="a", source="/in/a.wav", status="ok", duration=1.0), {"a.json": "{}"})
    failed = folder.finish(Outcome(name="b", source="/in/b.wav", status="error", error="bad"), {})
    folder.write_manifest([ok])  # b's row is lost (the run stopped before the manifest): its marker says it
    tasks = [_task("a"), _task("b"), _task("c")]
    todo, kept = pending(tasks, folder, retry_errors=False)
    assert [task.name for task in todo] == ["c"] and kept == [ok, failed]
    todo, kept = pending(tasks, folder, retry_errors=True)
    assert [task.name for task in todo] == ["b", "c"] and kept == [ok]
    assert (tmp_path / MANIFEST).read_text().count("\n") == 1


def test_rendering_is_the_rest_apis(tmp_path: Path) -> None:
    _files(tmp_path, "a.wav")
    [task] = plan(list_inputs(str(tmp_path)), ["json", "verbose_json", "text", "vtt"], "transcribe", None, True)
    words = [Word(word=" Hello", start=0.0, end=0.5), Word(word=" there.", start=0.5, end=1.0)]
    timing = {"seek": 0, "tokens": [], "temperature": 0.0, "avg_logprob": -0.1, "compression_ratio": 1.0}
    segment = Segment(id=0, start=0.0, end=1.0, text=" Hello there.", no_speech_prob=0.0, **timing)
    bodies = render(Transcript(language="en", duration=1.0, segments=[segment], words=words), task)
    assert set(bodies) == {"a.json", "a.verbose.json", "a.txt", "a.vtt"}
    assert json.loads(bodies["a.json"]) == {"text": "Hello there."}
    assert [word["word"] for word in json.loads(bodies["a.verbose.json"])["words"]] == ["Hello", "there."]
    assert bodies["a.vtt"].startswith("WEBVTT") and bodies["a.txt"] == "Hello there."


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc/x", "a//b", "_manifest", "a/.hidden", "a\\b", "x\ny"])
def test_a_manifest_id_that_would_leave_output_or_shadow_its_files_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "list.jsonl").write_text(json.dumps({"path": "a.wav", "id": name}) + "\n")
    with pytest.raises(ValueError, match=r"row 1: output name .* \(its `id` or file name\) must"):
        list_inputs(str(tmp_path / "list.jsonl"))


def test_a_manifest_id_may_name_folders_inside_output(tmp_path: Path) -> None:
    (tmp_path / "list.jsonl").write_text(json.dumps({"path": "a.wav", "id": "2026/calls/a-1"}) + "\n")
    assert [item.name for item in list_inputs(str(tmp_path / "list.jsonl"))] == ["2026/calls/a-1"]


def test_the_runs_vocabulary_is_read_as_the_forms_and_given_to_every_task(tmp_path: Path) -> None:
    config = engines(None).pipeline.vocabulary
    vocabulary = batch_vocabulary(["ClickHouse, Supabase", "Kubernetes"], "medical", config)
    assert vocabulary is not None and vocabulary.terms == ("ClickHouse", "Supabase", "Kubernetes")
    assert vocabulary.dictionary == "medical" and batch_vocabulary([], None, config) is None
    _files(tmp_path, "a.wav", "b.wav")
    tasks = list(plan_each(list_inputs(str(tmp_path)), ["json"], "transcribe", None, False, vocabulary))
    assert [task.options.vocabulary for task in tasks] == [vocabulary, vocabulary]
    with pytest.raises(PlanError, match="--dictionary: unknown dictionary 'legal'"):
        batch_vocabulary([], "legal", config)
    with pytest.raises(PlanError, match="--hotwords: at most 200 terms"):
        batch_vocabulary([f"term{index}" for index in range(201)], None, config)


def test_the_exit_status_says_whether_every_input_is_ok(tmp_path: Path) -> None:
    assert batch_main([str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert batch_main([str(tmp_path), str(tmp_path / "out"), "--dictionary", "legal"]) == 2


def test_the_engines_come_from_the_services_config() -> None:
    configured = engines(str(ROOT / "configs" / "local.yaml"))
    assert configured.whisper.model == "embedded:base" and configured.batching.max_batch_size == 4
    assert configured.pipeline.chunking.max_chunk_s == 30


def test_a_rerun_asking_for_another_format_does_the_file_again(tmp_path: Path) -> None:
    folder = OutputFolder(str(tmp_path))
    folder.finish(Outcome(name="a", source="/in/a.wav", status="ok", duration=1.0), {"a.json": "{}"})
    json_only = _task("a").model_copy(update={"outputs": ["a.json"]})
    with_srt = _task("a").model_copy(update={"outputs": ["a.json", "a.srt"]})
    assert pending([json_only], folder, retry_errors=False)[0] == []
    assert pending([with_srt], folder, retry_errors=False)[0] == [with_srt]


def test_the_plan_names_each_tasks_outputs(tmp_path: Path) -> None:
    _files(tmp_path, "calls/a.wav")
    [task] = plan(list_inputs(str(tmp_path)), ["srt", "verbose_json"], "transcribe", None, False)
    assert task.outputs == ["calls/a.srt", "calls/a.verbose.json"]


def test_progress_says_what_the_run_paid_before_its_first_output_and_times_the_rest_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deployments.batch import run as batch_run

    now = [100.0]
    monkeypatch.setattr("deployments.batch.run.time.monotonic", lambda: now[0])
    lines: list[str] = []
    progress = batch_run.Progress(4, lines.append, started=60.0)  # Ray's start counted from 60 s
    for at in (100.0, 102.0, 104.0):
        now[0] = at
        progress.add(Outcome(name=f"f{at}", source="x", status="ok", duration=30.0))
    assert lines[0].startswith("first output after 40.0 s")
    assert lines[1].startswith("[1/4]") and "ETA 120 s" in lines[1]  # before a second output: the wall so far
    assert lines[-1].startswith("[3/4]") and "ETA 2 s" in lines[-1]  # then 2 s a file, the rate since the first


def test_decoding_shares_the_engine_actors_cpus_on_cpus_and_stays_beside_gpu_actors() -> None:
    """Equal CPUs are what lets Ray Data run the decoding inside the engine actors (tests/test_batch_s3_run.py sees
    the fused stage); a GPU actor's CPUs feed its engine, so decoding runs beside it."""
    assert BatchSettings(num_cpus=2).decoding_cpus == 2
    assert BatchSettings(num_gpus=1, num_cpus=4).decoding_cpus == 0.5
    assert BatchSettings(num_cpus=2, decode_cpus=0.5).decoding_cpus == 0.5
    # a fused call holds its files themselves; a GPU actor's call, files' worth of chunk rows
    assert BatchSettings().fused and BatchSettings().call_files == 6
    assert not BatchSettings(num_gpus=1).fused and BatchSettings(num_gpus=1).call_files == 4
    assert not BatchSettings(decode_cpus=0.5).fused and BatchSettings(files_per_batch=2).call_files == 2
