"""The engines' stage: an autoscaling actor pool (`concurrency=(min, max)`, `num_gpus` per actor), each actor the
service's own `Transcriber` (its engine and batching lanes) run in-process. It takes `chunk` rows of any files and
decodes them in the Transcriber's batches, as the service decodes chunks of many requests; every other row passes
through. With GPUs it never decodes audio nor holds a file: its CPUs feed the engine; on CPUs Ray Data fuses the
decoding stage into it (the same CPUs: one process to start, no rows of audio between processes)."""

import asyncio
import json

import numpy as np
import pyarrow as pa

from deployments.batch.stages import ActorLoop, Engines, Row, rows_of, table, transcriber
from deployments.batch.tasks import FileTask, chunk_options
from deployments.types import BatchHints, ChunkOptions, ChunkTranscript


class ChunkTranscriber:
    """One actor of the pool (Ray Data's `map_batches` over the decode stage's rows)."""

    def __init__(self, engines: Engines) -> None:
        self.loop = ActorLoop()
        self.transcriber = transcriber(engines)

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = rows_of(batch)
        return table(self.loop.run(self._transcribe_all(rows)))

    async def _transcribe_all(self, rows: list[Row]) -> list[Row]:
        options: dict[str, ChunkOptions] = {}
        for item in rows:
            if item["kind"] == "chunk" and item["name"] not in options:
                options[item["name"]] = chunk_options(FileTask.model_validate_json(item["task"]))
        chunks = [index for index, item in enumerate(rows) if item["kind"] == "chunk"]
        transcripts = await asyncio.gather(
            *(
                self._transcribe(rows[index], options[rows[index]["name"]], more_coming=index != chunks[-1])
                for index in chunks
            )
        )
        done = list(rows)
        for index, transcript in zip(chunks, transcripts, strict=True):
            item = rows[index]
            info = json.dumps({"pieces": json.loads(item["info"]), "transcript": transcript.model_dump(mode="json")})
            done[index] = item | {"kind": "transcribed", "data": b"", "info": info}
        return done

    async def _transcribe(self, item: Row, options: ChunkOptions, more_coming: bool) -> ChunkTranscript:
        samples = np.frombuffer(item["data"], dtype=np.float32)
        # one sender: chunks go in as they came (the service's turns between senders, one a file, would bring
        # every file of a call to its end at once, and the first outputs only at the run's end)
        hints = BatchHints(interactive=False, more_coming=more_coming, sender="batch")
        transcript: ChunkTranscript = await self.transcriber.transcribe_chunk(samples, options, hints)
        return transcript
