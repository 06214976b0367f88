"""The assembling stage: one actor (on the driver's node) that collects each file's `transcribed` rows and `end`
row, in whatever order they come, and once a file's are all there puts its transcript together with the service's
own `TranscriptAssembly` (each chunk's language settled, chunks on the file's timeline). A file without speakers is
rendered and written here (`outcome` row); one with speakers goes on as an `assembled` row to the speakers' pool.

It holds only transcripts (text and times), never audio. A chunk the assembly must decode again in the file's
language (an unsurely detected one, or one beside a change of language) is read back from the file decoded again
here and decoded by a Transcriber of this actor's own, made only when a file first needs one. A row Ray Data
delivers twice (a retried decode task) counts once."""

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from deployments.batch.decode import spool_decoded
from deployments.batch.outputs import OutputFolder
from deployments.batch.scratch import file_scratch
from deployments.batch.stages import (
    ActorLoop,
    Engines,
    LocalHandle,
    Renderer,
    Row,
    described,
    outcome_row,
    row,
    rows_of,
    table,
    transcriber,
    write_error,
    write_result,
)
from deployments.batch.tasks import FileTask, chunk_options
from deployments.files.stages import ChunkSender, FileProgress, LanguageRule, TranscriptAssembly
from deployments.types import ChunkOptions, ChunkTranscript, Transcript


@dataclass
class FileParts:
    """What arrived of one file: its chunks' transcripts by index, and its `end` row's facts."""

    task: str
    chunks: dict[int, tuple[ChunkTranscript, tuple[tuple[int, int], ...]]] = field(default_factory=dict)
    end: dict[str, Any] | None = None

    def complete(self) -> bool:
        return self.end is not None and ("error" in self.end or len(self.chunks) == self.end["chunks"])


class FileAssembler:
    """The stage's one actor (`map_batches`, concurrency 1)."""

    def __init__(self, engines: Engines, output: str, render: Renderer, run: str, max_bytes: int) -> None:
        self.loop = ActorLoop()
        self.engines = engines
        self.output = OutputFolder(output)
        self.render = render
        self.run = run
        self.max_bytes = max_bytes
        self.files: dict[str, FileParts] = {}
        self.finished: set[str] = set()
        # for a chunk decoded again, when one is: on this actor's CPU (the GPUs are the engines' pool's)
        on_cpu = engines.whisper.model_copy(update={"device": "cpu", "compute_type": "int8"})
        self.transcriber = LocalHandle(lambda: transcriber(engines.model_copy(update={"whisper": on_cpu})))

    def __call__(self, batch: pa.Table) -> pa.Table:
        out: list[Row] = []
        for item in rows_of(batch):
            name = item["name"]
            if item["kind"] in ("outcome", "assembled"):
                out.append(item)
                continue
            if name in self.finished:  # a retried task's row of a file already done
                continue
            parts = self.files.setdefault(name, FileParts(item["task"]))
            if item["kind"] == "transcribed":
                info = json.loads(item["info"])
                pieces = tuple((int(start), int(end)) for start, end in info["pieces"])
                parts.chunks[int(item["index"])] = (ChunkTranscript.model_validate(info["transcript"]), pieces)
            elif item["kind"] == "end":
                parts.end = json.loads(item["info"])
            if parts.complete():
                del self.files[name]
                self.finished.add(name)
                out.append(self._finish(parts))
        return table(out)

    def _finish(self, parts: FileParts) -> Row:
        task = FileTask.model_validate_json(parts.task)
        assert parts.end is not None
        try:
            if "error" in parts.end:
                raise _Failed(parts.end["error"])
            transcript = self.loop.run(self._assemble(task, parts))
            if task.diarization is not None:
                info = json.dumps({"transcript": transcript.model_dump(mode="json"), "chunks": len(parts.chunks)})
                return row("assembled", task.name, parts.task, info)
            return outcome_row(write_result(self.output, self.render, task, transcript, self.run))
        except Exception as error:
            reason = str(error) if isinstance(error, _Failed) else described(error)
            return outcome_row(write_error(self.output, task, reason, self.run))

    async def _assemble(self, task: FileTask, parts: FileParts) -> Transcript:
        chunking = self.engines.pipeline.chunking
        with file_scratch() as scratch:
            sender = ReadBackSender(
                self.transcriber,
                chunk_options(task),
                max_in_flight=chunking.max_chunks_in_flight,
                decode=lambda: spool_decoded(task, Path(scratch), self.engines.pipeline, self.max_bytes),
            )
            for index in range(len(parts.chunks)):
                transcript, pieces = parts.chunks[index]
                sender.received(transcript, pieces)
            sender.end()
            assembly = TranscriptAssembly(
                sender,
                task.options.profanity_filter,
                rule=LanguageRule(chunking.language_per_chunk, chunking.language_min_probability),
            )
            return await assembly.transcript(float(parts.end["duration"] if parts.end else 0.0))


class ReadBackSender(ChunkSender):
    """The service's `ChunkSender` over chunks already transcribed (by the engines' pool): the assembly reads
    their transcripts from it, and a chunk it decodes again is read back from the file decoded on first need."""

    def __init__(self, transcriber: Any, options: ChunkOptions, max_in_flight: int, decode: Any) -> None:
        super().__init__(
            transcriber,
            options,
            interactive=False,
            max_in_flight=max_in_flight,
            slow_start=False,
            progress=FileProgress(None),
            decoded_path=None,
        )
        self.decode = decode
        self.decoding = asyncio.Lock()

    def received(self, transcript: ChunkTranscript, pieces: tuple[tuple[int, int], ...]) -> None:
        self.pieces.append(pieces)
        self.transcribed.append(True)
        self.transcripts.append(asyncio.ensure_future(_ready(transcript)))

    async def resend_pieces(self, pieces: tuple[tuple[int, int], ...], options: ChunkOptions) -> ChunkTranscript:
        async with self.decoding:
            if self.decoded_path is None:
                self.decoded_path = await asyncio.to_thread(self.decode)
        return await super().resend_pieces(pieces, options)


async def _ready(transcript: ChunkTranscript) -> ChunkTranscript:
    return transcript


class _Failed(Exception):
    """The decode stage's reason a file failed, passed on as it is."""
