"""The jobs this CLI submitted, kept in a small JSON file: a re-run of the same command (after Ctrl-C, a
lost connection or a closed laptop) waits on the jobs already submitted instead of uploading again."""

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

RETENTION_S = 12 * 3600  # the service keeps a job's result 12 hours; older entries are of no use


class SubmittedJob(BaseModel):
    job_id: str
    base_url: str
    source: str  # an absolute path, or a URL
    form: dict[str, str]  # the options it was submitted with
    output: str  # where its result goes
    submitted_at: float
    finished: bool = False


_JOBS = TypeAdapter(list[SubmittedJob])


class JobStateFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[SubmittedJob]:
        try:
            jobs = _JOBS.validate_json(self.path.read_bytes())
        except (FileNotFoundError, ValueError):
            return []
        return [job for job in jobs if time.time() - job.submitted_at < RETENTION_S]

    def find(self, base_url: str, source: str, form: dict[str, str], output: str) -> SubmittedJob | None:
        """An unfinished job submitted for exactly this input, options, destination and service."""
        for job in self.load():
            if not job.finished and (job.base_url, job.source, job.form, job.output) == (
                base_url,
                source,
                form,
                output,
            ):
                return job
        return None

    def add(self, job: SubmittedJob) -> None:
        self._save([*self.load(), job])

    def mark_finished(self, job_id: str) -> None:
        self._save([job.model_copy(update={"finished": True}) if job.job_id == job_id else job for job in self.load()])

    def _save(self, jobs: list[SubmittedJob]) -> None:
        """Written whole to a temporary file, then renamed over the old one: never half-written."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps([job.model_dump() for job in jobs], indent=1))
        temporary.replace(self.path)
