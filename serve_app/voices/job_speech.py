"""A voice enrolled from a speaker of one of the key's finished diarized jobs: the stretches where the diarizer
heard that speaker alone, read from the job's recording (kept while the job is: deployments/jobs/_book.py)."""

from fastapi import HTTPException, status
from starlette.concurrency import run_in_threadpool

from deployments.jobs.records import Job, JobStatus
from deployments.types import DiarizedTranscript, SpeakerTurn, VoicePrint
from serve_app.common.services import Services
from serve_app.voices.schemas import VoiceFromJob


async def job_voice_print(services: Services, owner: str, body: VoiceFromJob) -> VoicePrint:
    """The speaker's voice from the job's recording; a 400 naming the field that does not lead to one."""
    job: Job | None = await run_in_threadpool(services.jobs.get, body.job_id, owner) if services.jobs else None
    if job is None:
        raise _refuse(f"job_id: no job {body.job_id[:64]!r} of this key is kept (jobs are kept 12 h)")
    transcript = job.transcript
    if job.status != JobStatus.complete or not isinstance(transcript, DiarizedTranscript):
        raise _refuse("job_id: the job must be complete and diarized (task=diarize or response_format=diarized_json)")
    labels = {summary.speaker for summary in transcript.speakers}
    if body.speaker not in labels:
        raise _refuse(f"speaker: the job's speakers are {', '.join(sorted(labels)) or 'none'}")
    recording = services.config.storage.recordings_dir / job.job_id
    if not recording.exists():
        raise _refuse("job_id: the job's recording is not kept (it was deleted, or could not be kept)")
    spans = solo_spans(transcript.turns, body.speaker)
    voice: VoicePrint = await services.pipeline.voice_print.remote(
        str(recording), services.config.voices, spans, "speaker"
    )
    return voice


def solo_spans(turns: list[SpeakerTurn], speaker: str) -> list[tuple[float, float]]:
    """(start, end) where `speaker` talks and no one else does, in time order."""
    others = [(turn.start, turn.end) for turn in turns if turn.speaker != speaker]
    spans: list[tuple[float, float]] = []
    for turn in sorted((turn for turn in turns if turn.speaker == speaker), key=lambda turn: turn.start):
        pieces = [(turn.start, turn.end)]
        for other_start, other_end in others:  # what is left before and after each other speaker's turn
            cut = ((start, min(end, other_start)) for start, end in pieces)
            rest = ((max(start, other_end), end) for start, end in pieces)
            pieces = sorted(part for part in (*cut, *rest) if part[1] > part[0])
        spans += pieces
    return spans


def _refuse(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, detail)
