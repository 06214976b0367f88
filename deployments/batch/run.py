"""The driver: lists what is left to do, streams it through Ray Data's stages and keeps `_manifest.jsonl`.

    tasks -> decode + VAD-chunk (CPU tasks beside GPU actors; on CPUs inside the engine actors: `decode`) -> chunk rows
          -> the engines (an autoscaling actor pool, GPUs when asked: `engine`) -> chunk transcripts
          -> assemble (one actor on this node: `assemble`) -> written files' outcomes
             [-> speakers (an actor pool, only when a file asks for them: `speakers`) -> outcomes]
          -> here: the manifest (rewritten every few seconds and at the end) + progress

Ray Data streams every stage: a few blocks of chunks are in flight at once, so memory follows the window, not
the archive nor the longest file. A task or actor lost with its node is run again by Ray Data; rows it delivers
twice count once (`assemble`), and files already written are found by their markers (`decode`).
"""

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import BaseModel, Field

from deployments.batch.assemble import FileAssembler
from deployments.batch.decode import decode_parts
from deployments.batch.engine import ChunkTranscriber
from deployments.batch.journal import Journal
from deployments.batch.outputs import OutputFolder
from deployments.batch.resume import Resume
from deployments.batch.scratch import sweep
from deployments.batch.speakers import SpeakerFinder
from deployments.batch.stages import Engines, Renderer
from deployments.batch.tasks import FileTask, Outcome

MANIFEST_EVERY_S = 5.0
MAX_BLOCKS = 1000
CHUNKS_PER_FILE = 8  # an engine batch of `files_per_batch` files' worth of chunk rows


class BatchSettings(BaseModel):
    """How a batch runs on the cluster (the command's options)."""

    min_actors: int = Field(1, ge=1, description="The actor pool's smallest size.")
    max_actors: int = Field(1, ge=1, description="Its largest: Ray Data adds actors while files wait.")
    files_per_batch: int | None = Field(
        None,
        ge=1,
        description="An engine call's files. With GPUs, in chunk rows: files' worth of 8 chunk rows (a chunk row per"
        " 30 s of speech), 4 by default; on CPUs the call's files themselves, decoded and transcribed in it, 6 by"
        " default. A call's outputs are written when it ends.",
    )
    batches_per_actor: int = Field(
        2,
        ge=1,
        description="Batches of files an actor runs at once: while one batch's last file finishes, the next one's"
        " chunks keep the engine's batches full.",
    )
    num_gpus: float = Field(0, ge=0, description="GPUs per actor (the engine's device must be cuda then).")
    num_cpus: float = Field(1, gt=0, description="CPUs per engine actor.")
    decode_cpus: float | None = Field(
        None,
        gt=0,
        description="CPUs per decoding task. None: on CPUs the engine actor's, so that Ray Data runs decoding"
        " inside the engine actors (no processes of its own to start and feed); with GPUs 0.5, beside them, so"
        " that the GPU actors' CPUs only feed the engine.",
    )
    speaker_actors: int = Field(1, ge=1, description="The speakers' pool's largest size (when files ask for them).")
    speaker_cpus: float = Field(0.5, gt=0, description="CPUs per speakers' actor.")
    block_bytes: int = Field(
        16 << 20, gt=0, description="Ray Data's largest block: chunks travel in blocks of at most this many bytes."
    )
    retry_errors: bool = Field(False, description="Try again inputs whose earlier outcome was an error.")
    max_bytes: int = Field(3 << 30, gt=0, description="The largest file a manifest's URL row may fetch.")

    @property
    def decoding_cpus(self) -> float:
        """The decoding tasks' CPUs: on CPUs the engine actors', which Ray Data reads as one stage (the decoding
        runs in the engine actors' processes)."""
        return self.decode_cpus or (0.5 if self.num_gpus else self.num_cpus)

    @property
    def call_files(self) -> int:
        return self.files_per_batch or (6 if self.fused else 4)

    @property
    def fused(self) -> bool:
        """Whether Ray Data runs decoding inside the engine actors (equal resources): a call is then `call_files`
        files, decoded and transcribed in the call (Ray Data would otherwise bundle as many files as the engine's
        batch has chunk rows)."""
        return not self.num_gpus and self.decoding_cpus == self.num_cpus


class Progress:
    """Files, audio hours, throughput (audio seconds per wall second) and ETA, a line per file on stderr. The first
    output says how long the run took to get there (Ray's start, the engines' model load, the first batch), paid
    once; the ETA after it is at the rate since then."""

    def __init__(
        self, total: int, write: Callable[[str], Any] = sys.stderr.write, started: float | None = None
    ) -> None:
        self.total, self.done, self.errors, self.audio_s = total, 0, 0, 0.0
        self.started = time.monotonic() if started is None else started
        self.first: float | None = None  # when the first output came
        self.write = write

    def add(self, outcome: Outcome) -> None:
        now = time.monotonic()
        self.done += 1
        self.errors += outcome.status == "error"
        self.audio_s += outcome.duration or 0.0
        wall = max(now - self.started, 1e-6)
        if self.first is None:
            self.first = now
            self.write(f"first output after {wall:.1f} s (Ray's start, the model's load and the first batch)\n")
        rate = (now - self.first) / (self.done - 1) if self.done > 1 else wall
        eta = rate * (self.total - self.done)
        self.write(
            f"[{self.done}/{self.total}] {outcome.name}: {outcome.status} | {self.audio_s / 3600:.2f} h of audio,"
            f" {self.audio_s / wall:.2f} audio s/s, {self.errors} errors, ETA {eta:.0f} s\n"
        )


def run_batch(
    tasks: Iterable[FileTask], output: str, engines: Engines, render: Renderer, settings: BatchSettings
) -> Iterator[Outcome]:
    """Every pending task through the stages; the manifest's outcomes (earlier runs' and this one's), read back
    from OUTPUT's `_manifest.jsonl` one at a time. `tasks` is read once, as it streams (`Journal`)."""
    import ray
    import ray.data
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    folder, journal = OutputFolder(output), Journal()
    try:
        todo = journal.list(tasks, Resume(folder, settings.retry_errors))
        if todo:
            started = time.monotonic()
            if not ray.is_initialized():
                _start_ray()
            _stream(journal, todo, output, engines, render, settings, NodeAffinitySchedulingStrategy, started)
            folder.write_manifest_lines(journal.lines())  # a rerun with nothing to do writes nothing
    finally:
        journal.remove()
    return folder.iter_manifest()


def _stream(
    journal: Journal,
    todo: int,
    output: str,
    engines: Engines,
    render: Renderer,
    settings: BatchSettings,
    affinity: Any,
    started: float,
) -> None:
    import ray
    import ray.data

    sweep()  # scratch folders of batch processes killed on this node
    ray.data.DataContext.get_current().target_max_block_size = settings.block_bytes
    run, blocks = uuid.uuid4().hex, min(todo, MAX_BLOCKS)  # a block is what Ray Data retries: small, redo little
    dataset = ray.data.read_text(  # the listing's shards, on this node (its files are here)
        f"local://{journal.listing}", override_num_blocks=blocks, num_cpus=0
    )
    stage_args = {"output": output, "render": render, "run": run, "max_bytes": settings.max_bytes}
    chunks = dataset.map_batches(
        decode_parts,  # type: ignore[arg-type]  # its settings come as fn_kwargs
        fn_kwargs={"pipeline": engines.pipeline, "output": output, "run": run, "max_bytes": settings.max_bytes},
        batch_size=settings.call_files if settings.fused else 1,  # fused: a call's files
        batch_format="pyarrow",
        num_cpus=settings.decoding_cpus,  # the engines' on CPUs: fused into their actors
    )
    transcribed = chunks.map_batches(
        ChunkTranscriber,
        fn_constructor_kwargs={"engines": engines},
        batch_size=None if settings.fused else settings.call_files * CHUNKS_PER_FILE,  # fused: decoding's blocks
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(
            min_size=settings.min_actors,
            max_size=settings.max_actors,
            max_concurrent_calls_per_actor=settings.batches_per_actor,
            max_tasks_in_flight_per_actor=settings.batches_per_actor,
        ),
        num_gpus=settings.num_gpus or None,
        num_cpus=settings.num_cpus,
    )  # Ray Data restarts a lost actor and retries its tasks by default (max_restarts=-1, max_task_retries=-1)
    here = affinity(ray.get_runtime_context().get_node_id(), soft=False)
    finished = transcribed.map_batches(
        FileAssembler,
        fn_constructor_kwargs={"engines": engines} | stage_args,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=0,  # bookkeeping beside the driver; it decodes only a chunk the assembly must read again
        scheduling_strategy=here,  # its state (files half arrived) lives as long as the driver
    )
    if journal.speakers:
        finished = finished.map_batches(
            SpeakerFinder,
            fn_constructor_kwargs={"engines": engines} | stage_args,
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=settings.speaker_actors),
            num_cpus=settings.speaker_cpus,
        )
    folder, progress, written = OutputFolder(output), Progress(todo, started=started), time.monotonic()
    for row in finished.iter_rows():
        outcome = Outcome.model_validate_json(row["info"])
        if not journal.add(outcome):  # a retried block's row for a file already counted: one row per input
            continue
        progress.add(outcome)
        if time.monotonic() - written > max(MANIFEST_EVERY_S, progress.done / 1000):  # ~1 s per 10,000 rows
            folder.write_manifest_lines(journal.lines())
            written = time.monotonic()


def _start_ray() -> None:
    """Join the cluster given, else start a Ray of this run's own, without Ray's dashboard: on a small machine its
    processes cost the run seconds of start and CPU while it runs (`ray start --head` and RAY_ADDRESS give a run
    the dashboard)."""
    import ray

    started = time.monotonic()
    if _cluster_given():
        ray.init(log_to_driver=False)
    else:
        ray.init(address="local", log_to_driver=False, include_dashboard=False)
    sys.stderr.write(f"Ray up in {time.monotonic() - started:.1f} s\n")


def _cluster_given() -> bool:
    """`ray job submit` (RAY_ADDRESS) or a started cluster: join it; otherwise a Ray of this run's own."""

    return bool(os.environ.get("RAY_ADDRESS"))
