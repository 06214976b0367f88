"""`stream=true`: a synchronous transcription answered as server-sent events, the way OpenAI streams it.

    data: {"type": "transcript.text.delta", "delta": "And so my fellow Americans"}   (as chunks finish)
    data: {"type": "transcript.text.segment", ...}                                  (task=diarize, at the end)
    data: {"type": "transcript.text.done", "text": "..."}

The pipeline sends each chunk's text once it and every chunk before it are transcribed, so the deltas are
final and in timeline order, and joined they are the done event's text. A failure before the first event
(undecodable audio, a refused URL) is an ordinary HTTP error; one after it is an `error` event.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from deployments.errors import client_error
from deployments.retry import worker_lost
from deployments.storage.spool import remove_spooled
from deployments.types import DiarizedTranscript, PipelineProgress, PipelineRequest, PipelineResult, PipelineText
from serve_app.rest.schemas.stream_events import (
    StreamError,
    StreamErrorDetail,
    TranscriptTextDelta,
    TranscriptTextDone,
    TranscriptTextSegment,
)

logger = logging.getLogger(__name__)

ChargeResult = Callable[[PipelineResult], Awaitable[None]]


async def stream_transcription(
    pipeline: DeploymentHandle[Any], pipeline_request: PipelineRequest, charge: ChargeResult
) -> StreamingResponse:
    """Start the pipeline and wait for its first event, so that input it refuses gets a 4xx; then stream.
    The response owns the spooled input from here on and removes it when it ends."""
    events = cast(
        DeploymentResponseGenerator[Any], pipeline.options(stream=True).transcribe_streaming.remote(pipeline_request)
    )
    first = await events.__anext__()
    return StreamingResponse(
        _server_sent_events(first, events, charge, Path(pipeline_request.source_path)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},  # proxies must not hold events back
    )


def _sse(event: BaseModel) -> str:
    return f"data: {event.model_dump_json()}\n\n"


async def _server_sent_events(
    first: PipelineText | PipelineProgress | PipelineResult,
    events: DeploymentResponseGenerator[Any],
    charge: ChargeResult,
    spool_path: Path,
) -> AsyncIterator[str]:
    sent_text = False
    result: PipelineResult | None = None
    try:
        event = first
        while True:
            if isinstance(event, PipelineText):
                delta = event.text if sent_text else event.text.lstrip()  # the text starts without a space
                if delta:
                    sent_text = True
                    yield _sse(TranscriptTextDelta(delta=delta))
            elif not isinstance(event, PipelineProgress):
                result = event
                break
            event = await events.__anext__()
        await charge(result)
        if isinstance(result, DiarizedTranscript):
            for segment in result.segments:
                yield _sse(TranscriptTextSegment(id=f"seg_{segment.id}", start=segment.start, end=segment.end,
                                                 text=segment.text, speaker=segment.speaker))  # fmt: skip
        yield _sse(TranscriptTextDone(text=result.text))
    except Exception as error:  # the response has begun: the failure can only be an event now
        rejected = client_error(error)
        if rejected is not None:
            detail = StreamErrorDetail(message=str(rejected), type="invalid_request_error")
        elif worker_lost(error):  # a replica went away mid-stream (a restart, a redeploy): send it again
            logger.warning("a streamed transcription lost its worker: %s", type(error).__name__)
            detail = StreamErrorDetail(message="service unavailable: the worker handling this request stopped (a"
                                       " restart or redeploy); send it again", type="server_error")  # fmt: skip
        else:
            logger.exception("a streamed transcription failed")
            detail = StreamErrorDetail(message="internal error: the transcription could not be completed",
                                       type="server_error")  # fmt: skip
        yield _sse(StreamError(error=detail))
    finally:
        if result is None:
            events.cancel()  # type: ignore[no-untyped-call]  # Ray's, unannotated; the client went away, or the pipeline failed: stop its work
        remove_spooled(spool_path)
