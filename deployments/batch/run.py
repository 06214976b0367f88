"""The driver: lists what is left to do, streams it through Ray Data's actor pool and keeps `_manifest.jsonl`.

    tasks -> from_items (a block per few files) -> map_batches(FileTranscriber, an autoscaling actor pool)
          -> outcomes, streamed back here -> the manifest (rewritten every few seconds and at the end) + progress

Ray Data streams: at most a few blocks of tasks are in flight, so memory follows the pool, not the archive. A
block lost with its node is run again by Ray Data; the files of it that were already written are found by their
markers and not transcribed again (`stages`).
"""

import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from deployments.batch.outputs import OutputFolder
from deployments.batch.resume import pending
from deployments.batch.stages import Engines, FileTranscriber, Renderer
from deployments.batch.tasks import FileTask, Outcome

MANIFEST_EVERY_S = 5.0
MAX_BLOCKS = 1000


class BatchSettings(BaseModel):
    """How a batch runs on the cluster (the command's options)."""

    min_actors: int = Field(1, ge=1, description="The actor pool's smallest size.")
    max_actors: int = Field(1, ge=1, description="Its largest: Ray Data adds actors while files wait.")
    files_per_batch: int = Field(4, ge=1, description="Files an actor transcribes at once (their chunks batch).")
    batches_per_actor: int = Field(
        2,
        ge=1,
        description="Batches of files an actor runs at once: while one batch's last file finishes, the next one's"
        " chunks keep the engine's batches full.",
    )
    num_gpus: float = Field(0, ge=0, description="GPUs per actor (the engine's device must be cuda then).")
    num_cpus: float = Field(1, gt=0, description="CPUs per actor.")
    retry_errors: bool = Field(False, description="Try again inputs whose earlier outcome was an error.")
    max_bytes: int = Field(3 << 30, gt=0, description="The largest file a manifest's URL row may fetch.")


class Progress:
    """Files, audio hours, throughput (audio seconds per wall second) and ETA, a line per file on stderr."""

    def __init__(self, total: int, write: Callable[[str], Any] = sys.stderr.write) -> None:
        self.total, self.done, self.errors, self.audio_s = total, 0, 0, 0.0
        self.started = time.monotonic()
        self.write = write

    def add(self, outcome: Outcome) -> None:
        self.done += 1
        self.errors += outcome.status == "error"
        self.audio_s += outcome.duration or 0.0
        wall = max(time.monotonic() - self.started, 1e-6)
        eta = wall / self.done * (self.total - self.done)
        self.write(
            f"[{self.done}/{self.total}] {outcome.name}: {outcome.status} | {self.audio_s / 3600:.2f} h of audio,"
            f" {self.audio_s / wall:.2f} audio s/s, {self.errors} errors, ETA {eta:.0f} s\n"
        )


def run_batch(
    tasks: list[FileTask], output: str, engines: Engines, render: Renderer, settings: BatchSettings
) -> list[Outcome]:
    """Every pending task through the pool; the manifest's outcomes (earlier runs' and this one's) returned."""
    import ray
    import ray.data

    folder = OutputFolder(output)
    todo, outcomes = pending(tasks, folder, settings.retry_errors)
    names = {outcome.name for outcome in outcomes}
    if not todo:
        return outcomes
    if not ray.is_initialized():
        ray.init(address=None if _cluster_given() else "local", log_to_driver=False)
    blocks = min(len(todo), MAX_BLOCKS)  # a block is what Ray Data retries: small ones redo little
    dataset = ray.data.from_items([{"task": task.model_dump_json()} for task in todo], override_num_blocks=blocks)
    transcribed = dataset.map_batches(
        FileTranscriber,
        fn_constructor_kwargs={
            "engines": engines,
            "output": output,
            "render": render,
            "run": uuid.uuid4().hex,
            "max_bytes": settings.max_bytes,
        },
        batch_size=settings.files_per_batch,
        compute=ray.data.ActorPoolStrategy(
            min_size=settings.min_actors,
            max_size=settings.max_actors,
            max_concurrent_calls_per_actor=settings.batches_per_actor,
            max_tasks_in_flight_per_actor=settings.batches_per_actor,
        ),
        num_gpus=settings.num_gpus or None,
        num_cpus=settings.num_cpus,
    )  # Ray Data restarts a lost actor and retries its tasks by default (max_restarts=-1, max_task_retries=-1)
    progress, written = Progress(len(todo)), time.monotonic()
    for row in transcribed.iter_rows():
        outcome = Outcome.model_validate_json(row["outcome"])
        if outcome.name in names:  # a retried block's row for a file already counted: one row per input
            continue
        names.add(outcome.name)
        outcomes.append(outcome)
        progress.add(outcome)
        if time.monotonic() - written > MANIFEST_EVERY_S:
            folder.write_manifest(outcomes)
            written = time.monotonic()
    folder.write_manifest(outcomes)
    return outcomes


def _cluster_given() -> bool:
    """`ray job submit` (RAY_ADDRESS) or a started cluster: join it; otherwise a Ray of this run's own."""

    return bool(os.environ.get("RAY_ADDRESS"))
