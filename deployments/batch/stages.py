"""The Ray Data stage that transcribes: an actor pool, each actor holding the service's own parts in-process
(the `Transcriber` with its engine and batching lanes, the `TranscriptionPipeline` that decodes, VAD-chunks and
assembles, the `Diarizer` when a file asks for speakers), called directly instead of through Serve handles.

An actor takes a batch of files and runs them at once: their chunks meet at the Transcriber's gate and are decoded
in batches across files, as the service's are. Each file is copied from its source into a local spool (pyarrow
reads the object stores), transcribed, rendered by the edge's `Renderer`, written atomically, then marked done;
a file whose marker this run already wrote (a block Ray Data retried after losing a node) is not done again.
"""

import asyncio
import shutil
import tempfile
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
from pydantic import BaseModel

from deployments.batch.inputs import filesystem, is_url
from deployments.batch.outputs import OutputFolder
from deployments.batch.tasks import FileTask, Outcome
from deployments.config import BatchingConfig, DiarizationConfig, PipelineConfig, WhisperModelConfig
from deployments.diarization.deployment import Diarizer
from deployments.files.pipeline import TranscriptionPipeline
from deployments.transcriber.deployment import Transcriber
from deployments.types import PipelineRequest, PipelineResult

Renderer = Callable[[PipelineResult, FileTask], dict[str, str]]
"""The edge's rendering of a result: output path relative to OUTPUT (the task's name and an extension) -> body."""


class Engines(BaseModel):
    """The service's sections a batch runs with (`AppConfig`'s whisper, chunking, limits, diarization and the
    Transcriber's batching), so that a batch and the service give the same transcript."""

    whisper: WhisperModelConfig
    batching: BatchingConfig
    pipeline: PipelineConfig
    diarization: DiarizationConfig


class LocalHandle:
    """A deployment's object called in this process the way its handle is: `handle.method.remote(*args)`
    is awaited. The object is made on first use (the Diarizer's models only load when a file asks for speakers)."""

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


class FileTranscriber:
    """One actor of the pool (Ray Data's `map_batches` over rows `{"task": FileTask JSON}`). Ray Data may call it
    from several threads at once (`batches_per_actor`): every call's files run on the one event loop."""

    def __init__(self, engines: Engines, output: str, render: Renderer, run: str, max_bytes: int) -> None:
        serve_batch_outside_serve()
        # One loop for the actor's life, in a thread of its own (Ray Data calls the actor from a thread pool): the
        # Transcriber's batch queues live in it.
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="batch-loop", daemon=True).start()
        transcriber = deployment_class(Transcriber)(engines.whisper)
        transcriber.reconfigure(engines.batching.model_dump())
        diarizer = LocalHandle(lambda: deployment_class(Diarizer)(engines.diarization))
        self.pipeline = deployment_class(TranscriptionPipeline)(
            LocalHandle(lambda: transcriber), diarizer, engines.pipeline
        )
        self.output = OutputFolder(output)
        self.render = render
        self.run = run
        self.max_bytes = max_bytes
        self.spool = Path(tempfile.mkdtemp(prefix="stt-batch-"))

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "spool", "/nonexistent"), ignore_errors=True)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list[Any]]:
        tasks = [FileTask.model_validate_json(str(text)) for text in batch["task"]]
        outcomes = asyncio.run_coroutine_threadsafe(self._transcribe_all(tasks), self.loop).result()
        return {"outcome": [outcome.model_dump_json() for outcome in outcomes]}

    async def _transcribe_all(self, tasks: list[FileTask]) -> list[Outcome]:
        return await asyncio.gather(*(self.transcribe(task) for task in tasks))

    async def transcribe(self, task: FileTask) -> Outcome:
        """One file, start to marker; whatever goes wrong with it is its `error` outcome, never the run's end."""
        done = await asyncio.to_thread(self.output.marker, task.name)
        if done is not None and ((done.status == "ok" and done.covers(task)) or done.run == self.run):
            return done  # written before its block was lost with a node, or by an earlier run
        outcome = Outcome(name=task.name, source=task.source, status="error", run=self.run)
        spooled = self.spool / f"{uuid.uuid4().hex}{Path(task.source.split('?')[0]).suffix[:16]}"
        try:
            result = await self._transcribe(task, spooled)
            bodies = await asyncio.to_thread(self.render, result, task)
            ok = outcome.model_copy(
                update={"status": "ok", "duration": round(result.duration, 3), "language": result.language}
            )
            return await asyncio.to_thread(self.output.finish, ok, bodies)
        except Exception as error:
            failed = outcome.model_copy(update={"error": f"{type(error).__name__}: {error}"})
            return await asyncio.to_thread(self.output.finish, failed, {})
        finally:
            spooled.unlink(missing_ok=True)

    async def _transcribe(self, task: FileTask, spooled: Path) -> PipelineResult:
        url = task.source if is_url(task.source) else None
        if url is None:
            await asyncio.to_thread(_copy, task.source, spooled)
        request = PipelineRequest(
            source_path=str(spooled),
            url=url,
            max_bytes=self.max_bytes,
            options=task.options,
            diarization=task.diarization,
        )
        return cast(PipelineResult, await self.pipeline.transcribe(request))


def _copy(source: str, target: Path) -> None:
    """The source into the actor's local spool: decoding, and the decoded copies beside it, stay local."""
    source_fs, path = filesystem(source)
    with source_fs.open_input_stream(path) as stream, target.open("wb") as out:
        while chunk := stream.read(1 << 20):
            out.write(chunk)
