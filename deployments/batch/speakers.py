"""The speakers' stage, only when a file asks for them: an actor pool of the service's own `Diarizer`, after the
assembly. Each `assembled` row's file is decoded again into this actor's scratch (the raw 16 kHz copy the Diarizer
reads, a window at a time), diarized, its words given to speakers as the service does, rendered and written; other
rows pass through. The engines' actors never hold a diarization model nor a decoded file."""

import json
from pathlib import Path

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
    deployment_class,
    described,
    outcome_row,
    rows_of,
    table,
    write_error,
    write_result,
)
from deployments.batch.tasks import FileTask
from deployments.diarization.deployment import Diarizer
from deployments.diarization.words import diarized_transcription
from deployments.types import Diarization, DiarizationOptions, Transcript


class SpeakerFinder:
    """One actor of the pool (`map_batches` over the assembling stage's rows)."""

    def __init__(self, engines: Engines, output: str, render: Renderer, run: str, max_bytes: int) -> None:
        self.loop = ActorLoop()
        self.engines = engines
        self.diarizer = LocalHandle(lambda: deployment_class(Diarizer)(engines.diarization))
        self.output = OutputFolder(output)
        self.render = render
        self.run = run
        self.max_bytes = max_bytes

    def __call__(self, batch: pa.Table) -> pa.Table:
        return table([self._diarize(item) if item["kind"] == "assembled" else item for item in rows_of(batch)])

    def _diarize(self, item: Row) -> Row:
        task = FileTask.model_validate_json(item["task"])
        try:
            info = json.loads(item["info"])
            transcript = Transcript.model_validate(info["transcript"])
            assert task.diarization is not None
            diarization = self._speakers(task, task.diarization, int(info["chunks"]))
            result = diarized_transcription(transcript, diarization)
            return outcome_row(write_result(self.output, self.render, task, result, self.run))
        except Exception as error:
            return outcome_row(write_error(self.output, task, described(error), self.run))

    def _speakers(self, task: FileTask, options: DiarizationOptions, chunks: int) -> Diarization:
        if not chunks:  # no speech was found, so there is no one to find (as the service's pipeline)
            return Diarization(turns=[], exclusive_turns=[])
        with file_scratch() as scratch:
            decoded = spool_decoded(task, Path(scratch), self.engines.pipeline, self.max_bytes)
            found: Diarization = self.loop.run(self.diarizer.diarize_file.remote(str(decoded), options))
            return found
