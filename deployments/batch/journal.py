"""The driver's own files for one run, in its scratch folder (removed at the end): the listing of what is to do,
written as it is listed (shards of `SHARD` tasks, JSON lines) for Ray Data to read, and the outcomes, appended as
they come, from which `_manifest.jsonl` is written. So a listing of 100,000 inputs and their outcomes are files
here, not lists in the driver's memory: it holds the set of outcome names (one row per input) and little else."""

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from deployments.batch.resume import Resume
from deployments.batch.scratch import process_scratch
from deployments.batch.tasks import FileTask, Outcome

SHARD = 100


class Journal:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="run-", dir=process_scratch()))
        self.listing = self.folder / "listing"
        self.listing.mkdir()
        self.outcomes_path = self.folder / "outcomes.jsonl"
        self.outcomes_path.touch()
        self.names: set[str] = set()
        self.todo = 0
        self.speakers = False  # whether a file to do asks for speakers (the speakers' pool is then made)

    def list(self, tasks: Iterable[FileTask], resume: Resume) -> int:
        """Each task to do into the listing, each earlier outcome that stands into the outcomes; how many to do."""
        shard = None
        try:
            for task in tasks:
                kept = resume.kept(task)
                if kept is not None:
                    self.add(kept)
                    continue
                if shard is None or self.todo % SHARD == 0:
                    if shard is not None:
                        shard.close()
                    shard = (self.listing / f"{self.todo // SHARD:07d}.jsonl").open("w", encoding="utf-8")
                self.speakers = self.speakers or task.diarization is not None
                shard.write(task.model_dump_json() + "\n")
                self.todo += 1
        finally:
            if shard is not None:
                shard.close()
        for outcome in resume.rest():
            self.add(outcome)
        return self.todo

    def add(self, outcome: Outcome) -> bool:
        """An outcome, once per input: False for a row already there (a retried block's)."""
        if outcome.name in self.names:
            return False
        self.names.add(outcome.name)
        with self.outcomes_path.open("a", encoding="utf-8") as out:
            out.write(outcome.model_dump_json(exclude_none=True) + "\n")
        return True

    def lines(self) -> Iterator[str]:
        with self.outcomes_path.open(encoding="utf-8") as lines:
            yield from lines

    def outcomes(self) -> Iterator[Outcome]:
        for line in self.lines():
            yield Outcome.model_validate_json(line)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
