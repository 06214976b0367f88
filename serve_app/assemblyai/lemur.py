"""LeMUR's task (`POST /lemur/v3/generate/task`) over the service's Analyzer: the key's finished transcripts
(or `input_text`) read as one transcript, the prompt answered by the configured LLM whatever `final_model`
names, and charged as the service charges an analysis (its tokens at the key's LLM price)."""

import uuid
from typing import Any

from fastapi import HTTPException, status

from deployments.billing import pricing
from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Price
from deployments.jobs.records import Job, JobStatus
from deployments.types import DiarizedTranscript, PipelineResult, Segment, Transcript
from serve_app.assemblyai.config import ASSEMBLYAI
from serve_app.assemblyai.rendering import plain_segment, speaker_letters
from serve_app.assemblyai.schemas import LemurTaskParams
from serve_app.config import AppConfig


def check(params: LemurTaskParams, config: AppConfig) -> None:
    """400 for what the service cannot honour: a model name it does not know, a temperature above 0."""
    offered = ASSEMBLYAI.of(config).lemur_models
    if params.final_model not in offered:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"final_model {params.final_model[:64]!r} is not offered: this service offers {', '.join(offered)}",
        )
    if params.temperature:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            "temperature: this service's LLM answers deterministically; give 0 or leave it out",
        )


def prompt_of(params: LemurTaskParams) -> str:
    if params.context is None:
        return params.prompt
    return f"Context: {params.context}\n\n{params.prompt}"


def max_output_tokens(params: LemurTaskParams, config: AppConfig) -> int:
    """`max_output_size` is an upper bound; the service's `analysis.max_output_tokens` is a lower one still."""
    configured = config.analysis.max_output_tokens
    return min(params.max_output_size or configured, configured)


def finished(jobs: list[Job | None], ids: list[str]) -> list[PipelineResult]:
    """The transcripts of the jobs (found for this key, in `ids` order), or 400 naming one that is not there."""
    results = []
    for transcript_id, job in zip(ids, jobs, strict=True):
        if job is None:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"transcript {transcript_id[:64]!r} not found")
        if job.status != JobStatus.complete or job.transcript is None:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST, f"transcript {transcript_id[:64]!r} has not completed: wait for it"
            )
        results.append(job.transcript)
    return results


def joined(results: list[PipelineResult]) -> PipelineResult:
    """One transcript as the Analyzer reads one; several follow each other, a diarized one's lines led by its
    speakers' letters (as its transcript shows them)."""
    if len(results) == 1:
        return results[0]
    segments: list[Segment] = []
    offset = 0.0
    for result in results:
        if isinstance(result, DiarizedTranscript):
            letters = speaker_letters(result)
            lines = [(s.start, s.end, f"{letters[s.speaker]}: {s.text.strip()}") for s in result.segments]
        else:
            lines = [(s.start, s.end, s.text.strip()) for s in result.segments]
        segments += [plain_segment(len(segments), offset + start, offset + end, text) for start, end, text in lines]
        offset += result.duration
    return Transcript(language=results[0].language, duration=offset, segments=segments)


def text_transcript(text: str) -> Transcript:
    return Transcript(language="en", duration=0.0, segments=[plain_segment(0, 0.0, 0.0, text)])


async def charge(
    ledger: Any, owner: str, price: Price, params: LemurTaskParams, input_tokens: int, output_tokens: int
) -> str:
    """Charge the task's tokens once (by its request id); the request id."""
    request_id = str(uuid.uuid4())
    details = ChargeDetails(
        task="lemur",
        model=params.final_model,
        rate_per_min=price.rate_per_min,
        llm_price_per_1k_tokens=price.llm_price_per_1k_tokens,
        llm_input_tokens=input_tokens,
        llm_output_tokens=output_tokens,
    )
    await pricing.charge(ledger, request_id, owner, 0.0, details)
    return request_id
