"""A batch's listing streams: 20,000 inputs are walked, checked against the earlier run's markers and written to
the driver's journal one at a time, never a list in the driver (its memory stays a few MB); a rerun does the rest."""

import json
import os
import subprocess
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from deployments.batch.inputs import Listed, iter_inputs
from deployments.batch.journal import SHARD, Journal
from deployments.batch.outputs import OutputFolder
from deployments.batch.resume import Resume
from deployments.batch.scratch import sweep
from deployments.batch.tasks import FileTask, Outcome
from deployments.types import TranscriptionOptions

FILES, FOLDERS, DONE = 20_000, 20, 5_000
OPTIONS = TranscriptionOptions()


def tasks(listed: Iterator[Listed]) -> Iterator[FileTask]:
    for item in listed:
        yield FileTask(source=item.source, name=item.name, options=OPTIONS, outputs=[f"{item.name}.json"])


def test_twenty_thousand_inputs_list_and_resume_without_a_list_in_memory(tmp_path: Path) -> None:
    root, output = tmp_path / "in", OutputFolder(str(tmp_path / "out"))
    for index in range(FILES):
        folder = root / f"batch{index % FOLDERS:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"call{index:05d}.wav").touch()
    (root / "_out").mkdir()
    (root / "_out" / "left-out.wav").touch()
    names = sorted(f"batch{index % FOLDERS:02d}/call{index:05d}" for index in range(FILES))
    for name in names[:DONE]:  # an earlier run finished these (one of them an error), then stopped
        output.finish(Outcome(name=name, source=name, status="ok", duration=1.0), {f"{name}.json": "{}"})
    output.finish(Outcome(name=names[DONE], source=names[DONE], status="error", error="not audio"), {})

    listed = iter_inputs(str(root))
    assert not isinstance(listed, list)
    journal = Journal()
    try:
        tracemalloc.start()
        todo = journal.list(tasks(listed), Resume(output, retry_errors=False))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert todo == FILES - DONE - 1
        shards = sorted(journal.listing.iterdir())
        assert len(shards) == -(-todo // SHARD)
        to_do = [json.loads(line)["name"] for shard in shards for line in shard.read_text().splitlines()]
        assert sorted(to_do) == names[DONE + 1 :]  # each once, none finished, nothing hidden
        kept = [outcome.name for outcome in journal.outcomes()]
        assert sorted(kept) == names[: DONE + 1]
        # A list of tasks: ~80 MB. Alone this measures ~14 MB; tracemalloc counts every thread of the process, and
        # under xdist a neighbouring test's leftovers have added ~8 MB.
        assert peak < 40e6, f"{peak / 1e6:.1f} MB while listing {FILES} inputs"
    finally:
        journal.remove()
    assert not journal.folder.exists()

    retry = Journal()  # with retry_errors the failed one is done again
    try:
        assert retry.list(tasks(iter_inputs(str(root))), Resume(output, retry_errors=True)) == FILES - DONE
    finally:
        retry.remove()


def test_scratch_folders_of_processes_that_are_gone_are_swept(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / f"stt-batch-{gone.pid}-abc").mkdir()  # an actor killed outright
    (tmp_path / f"stt-batch-{os.getpid()}-def").mkdir()  # a live process's
    (tmp_path / "stt-batch-oldstyle").mkdir()  # no pid in its name: left until it is an hour old
    assert sweep(tmp_path) == [tmp_path / f"stt-batch-{gone.pid}-abc"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"stt-batch-{os.getpid()}-def", "stt-batch-oldstyle"]


def test_the_assembling_stage_takes_a_files_rows_in_any_order_and_counts_a_repeated_row_once(tmp_path: Path) -> None:
    from deployments.batch.assemble import FileAssembler
    from deployments.batch.stages import row, table
    from deployments.types import ChunkTranscript, Segment
    from serve_app.batch.__main__ import engines
    from serve_app.batch.plan import plan
    from serve_app.batch.render import render

    (tmp_path / "a.wav").touch()
    [task] = plan(iter_inputs(str(tmp_path / "a.wav")), ["json", "srt"], "transcribe", "en", False)
    text = task.model_dump_json()

    def transcribed(index: int, words: str) -> dict[str, object]:
        segment = Segment(id=0, seek=0, start=0.0, end=2.0, text=f" {words}", tokens=[], temperature=0.0,
                          avg_logprob=-0.1, compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip
        transcript = ChunkTranscript(language="en", segments=[segment])
        pieces = [[index * 48_000, index * 48_000 + 32_000]]
        info = json.dumps({"pieces": pieces, "transcript": transcript.model_dump(mode="json")})
        return row("transcribed", task.name, text, info, index)

    end = row("end", task.name, text, json.dumps({"chunks": 2, "duration": 6.0}))
    assembler = FileAssembler(engines(None), str(tmp_path / "out"), render, "run-1", 1 << 20)
    assert assembler(table([transcribed(1, "world."), end])).num_rows == 0  # chunk 0 still on its way
    [outcome] = assembler(table([transcribed(0, "Hello"), transcribed(1, "world.")])).to_pylist()
    assert outcome["kind"] == "outcome" and json.loads(outcome["info"])["status"] == "ok"
    assert json.loads((tmp_path / "out" / "a.json").read_text())["text"] == "Hello world."
    assert "--> 00:00:05,000" in (tmp_path / "out" / "a.srt").read_text()  # chunk 1 at 3 s of the file
    assert assembler(table([transcribed(0, "Hello"), end])).num_rows == 0  # a retried task's rows: done already
