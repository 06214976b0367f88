"""What the batch's Ray Data stages share: the service's sections they run with (`Engines`), the rows they pass
on, the service's deployment classes run in-process, and the writing of a finished file.

    tasks -> decode (CPU tasks: `decode`) -> chunk rows -> engines (actor pool: `engine`) -> transcribed rows
          -> assemble (one actor: `assemble`) -> outcome rows, or with speakers -> diarize (actor pool:
             `speakers`) -> outcome rows

Every stage passes the same columns (`SCHEMA`); a row's `kind` says what it is:
`chunk` (`data`: a chunk's float32 samples, `info`: its pieces), `transcribed` (`info`: its pieces and
transcript), `end` (`info`: a file's chunk count and duration, or its error), `assembled` (`info`: a file's
transcript, for the speakers' pool) and `outcome` (`info`: the file's `Outcome`, once its outputs are written).
"""

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import pyarrow as pa
from pydantic import BaseModel

from deployments.batch.outputs import OutputFolder
from deployments.batch.tasks import FileTask, Outcome
from deployments.config import BatchingConfig, DiarizationConfig, PipelineConfig, WhisperModelConfig
from deployments.files.stages import mask_transcript
from deployments.transcriber.deployment import Transcriber
from deployments.types import PipelineResult

Renderer = Callable[[PipelineResult, FileTask], dict[str, str]]
"""The edge's rendering of a result: output path relative to OUTPUT (the task's name and an extension) -> body."""

SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("name", pa.string()),
        ("task", pa.string()),
        ("index", pa.int64()),
        ("data", pa.binary()),
        ("info", pa.string()),
    ]
)
Row = dict[str, Any]
T = TypeVar("T")


class Engines(BaseModel):
    """The service's sections a batch runs with (`AppConfig`'s whisper, chunking, limits, diarization and the
    Transcriber's batching), so that a batch and the service give the same transcript."""

    whisper: WhisperModelConfig
    batching: BatchingConfig
    pipeline: PipelineConfig
    diarization: DiarizationConfig


def row(kind: str, name: str, task: str, info: str = "", index: int = 0, data: bytes = b"") -> Row:
    """One row of `SCHEMA` (`task`: the file's FileTask JSON)."""
    return {"kind": kind, "name": name, "task": task, "index": index, "data": data, "info": info}


def outcome_row(outcome: Outcome, task: str = "") -> Row:
    return row("outcome", outcome.name, task, outcome.model_dump_json())


def table(rows: list[Row]) -> pa.Table:
    """Rows as the stages pass them: typed, so an empty batch has the same columns."""
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def rows_of(batch: pa.Table) -> list[Row]:
    return cast(list[Row], batch.to_pylist())


class LocalHandle:
    """A deployment's object called in this process the way its handle is: `handle.method.remote(*args)`
    is awaited. The object is made on first use (a model loads only when a file needs it)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._target: Any = None

    def __getattr__(self, method: str) -> "LocalMethod":
        if method.startswith("_"):
            raise AttributeError(method)
        if self._target is None:
            self._target = self._make()
        return LocalMethod(getattr(self._target, method))


class LocalMethod:
    def __init__(self, method: Callable[..., Awaitable[Any]]) -> None:
        self.method = method

    def remote(self, *args: Any, **kwargs: Any) -> Awaitable[Any]:
        return self.method(*args, **kwargs)


def deployment_class(deployment: Any) -> Callable[..., Any]:
    """The class a `@serve.deployment` wraps: the same code, run in this actor."""
    return cast(Callable[..., Any], deployment.func_or_class)


def serve_batch_outside_serve() -> None:
    """`@serve.batch` works in any event loop but for one call: its queue warns when the replica's
    max_ongoing_requests is below a batch, reading the replica's context, which an actor of this pool has not.
    That warning is meaningless here (no Serve queue in front), so it is left out in these actors."""
    from ray.serve import batching

    batching._BatchQueue._warn_if_max_batch_size_exceeds_max_ongoing_requests = lambda self: None  # type: ignore[method-assign]


def transcriber(engines: Engines) -> Any:
    """The service's Transcriber (its engine and batching lanes), in this process."""
    serve_batch_outside_serve()
    made = deployment_class(Transcriber)(engines.whisper)
    made.reconfigure(engines.batching.model_dump())
    return made


class ActorLoop:
    """One event loop for an actor's life, in a thread of its own: Ray Data calls an actor from a thread pool
    (several calls at once), and the Transcriber's batch queues must all live in one loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="batch-loop", daemon=True).start()

    def run(self, awaitable: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self.loop).result()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def write_result(output: OutputFolder, render: Renderer, task: FileTask, result: PipelineResult, run: str) -> Outcome:
    """A file's result (masked when asked) rendered by the edge, its outputs written, then its marker."""
    if task.options.profanity_filter:
        result = mask_transcript(result)
    bodies = render(result, task)
    ok = Outcome(
        name=task.name,
        source=task.source,
        status="ok",
        run=run,
        duration=round(result.duration, 3),
        language=result.language,
    )
    return output.finish(ok, bodies)


def write_error(output: OutputFolder, task: FileTask, error: str, run: str) -> Outcome:
    """A file that could not be transcribed: its marker says why (no outputs), and the run goes on."""
    return output.finish(Outcome(name=task.name, source=task.source, status="error", run=run, error=error), {})


def described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
