"""The CPU stage: each file copied from its source into a local scratch folder, decoded a window at a time and cut
into VAD chunks by the files feature's own decoder and chunker (`decode_windows`, `StreamingChunker`), as the
service's pipeline does. A file leaves as one `chunk` row per chunk (at most 30 s of speech, under 2 MB), streamed
as they are cut, then an `end` row: a 10 h file is about a thousand small rows in flight a few at a time, never
one row nor one actor holding it whole. With GPUs these are Ray tasks beside the engines' actors (GPU actors never
decode); on CPUs Ray Data runs them inside the engine actors (`BatchSettings.decoding_cpus`)."""

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from deployments.batch.inputs import filesystem, is_url
from deployments.batch.outputs import OutputFolder
from deployments.batch.stages import Row, described, outcome_row, row, rows_of, table
from deployments.batch.tasks import FileTask
from deployments.config import PipelineConfig
from deployments.errors import AudioRejectedError
from deployments.files.decoding import declared_duration, decode_windows, too_long
from deployments.files.stages import Chunk, SpeechChunker, StreamingChunker, fetch_to_file
from deployments.types import SAMPLE_RATE

ROWS_PER_YIELD = 4  # chunks handed on together: small blocks that Ray Data's window bounds


def decode_parts(
    batch: pa.Table, pipeline: PipelineConfig, output: str, run: str, max_bytes: int
) -> Iterator[pa.Table]:
    """Ray Data's `map_batches` over the listing's rows `{"text": FileTask JSON}` (a generator: rows leave as they
    are cut). A
    file this run or an earlier one finished (its marker) leaves as its `outcome` row, undone."""
    folder = OutputFolder(output)
    for item in rows_of(batch):
        task = FileTask.model_validate_json(item["text"])
        done = folder.marker(task.name)
        if done is not None and ((done.status == "ok" and done.covers(task)) or done.run == run):
            yield table([outcome_row(done)])
            continue
        pending: list[Row] = []
        for part in file_parts(task, pipeline, max_bytes):
            pending.append(part)
            if len(pending) >= ROWS_PER_YIELD or part["kind"] == "end":
                yield table(pending)
                pending = []


def file_parts(task: FileTask, pipeline: PipelineConfig, max_bytes: int) -> Iterator[Row]:
    """One file's `chunk` rows, then its `end` row (its chunk count and duration, or what was wrong with it)."""
    from deployments.batch.scratch import file_scratch

    limits, chunking = pipeline.limits, pipeline.chunking
    chunker = SpeechChunker(chunking.vad_filter, chunking.max_chunk_s, chunking.max_span_s)
    if task.options.speech_detection is not None:
        chunker = chunker.detecting(task.options.speech_detection)
    text, count, samples = task.model_dump_json(), 0, 0
    with file_scratch() as scratch:
        try:
            source = spool_input(task, Path(scratch), pipeline, max_bytes)
            declared = declared_duration(source)
            if declared is not None and declared > limits.max_duration_s + 1:  # refused before decoding
                raise too_long(limits.max_duration_s, declared)
            streaming = StreamingChunker(chunker)
            windows = decode_windows(source, max_duration_s=limits.max_duration_s)

            def chunks() -> Iterator[Chunk]:
                nonlocal samples
                for window in windows:
                    samples += len(window)
                    yield from streaming.feed(window)
                yield from streaming.finish()

            try:
                for chunk in chunks():
                    samples_bytes = chunk.samples.astype(np.float32).tobytes()
                    yield row("chunk", task.name, text, json.dumps(chunk.pieces), count, samples_bytes)
                    count += 1
            finally:
                windows.close()
            duration = samples / SAMPLE_RATE
            if duration < limits.min_duration_s:
                raise AudioRejectedError(
                    f"audio is too short ({duration:.2f} s): the minimum is {limits.min_duration_s} s"
                )
            yield row("end", task.name, text, json.dumps({"chunks": count, "duration": duration}))
        except Exception as error:
            yield row("end", task.name, text, json.dumps({"chunks": count, "error": described(error)}))


def spool_input(task: FileTask, scratch: Path, pipeline: PipelineConfig, max_bytes: int) -> Path:
    """The source in `scratch`: copied from its filesystem (pyarrow reads the object stores), or a URL fetched as
    the service fetches one (its size limit and address checks)."""
    target = scratch / f"input{Path(task.source.split('?')[0]).suffix[:16]}"
    if is_url(task.source):
        asyncio.run(fetch_to_file(task.source, target, max_bytes, pipeline.url_input))
        return target
    source_fs, path = filesystem(task.source)
    with source_fs.open_input_stream(path) as stream, target.open("wb") as out:
        while chunk := stream.read(1 << 20):
            out.write(chunk)
    return target


def spool_decoded(task: FileTask, scratch: Path, pipeline: PipelineConfig, max_bytes: int) -> Path:
    """The file decoded again into `scratch` as raw 16 kHz float32 (what the Diarizer reads, and where a chunk is
    read back to be decoded in another language), a window at a time."""
    source = spool_input(task, scratch, pipeline, max_bytes)
    decoded = scratch / "decoded.f32"
    windows = decode_windows(source, max_duration_s=pipeline.limits.max_duration_s)
    try:
        with decoded.open("wb") as out:
            for window in windows:
                out.write(window.astype(np.float32).tobytes())
    finally:
        windows.close()
    source.unlink(missing_ok=True)
    return decoded
