"""A synchronous transcription, whatever protocol it came in by: the request read into an `Intake`, the pipeline
asked (once more if its replica dies: the client is still waiting), the result charged once, then rendered.

    return await transcribe_synchronously(services, key, read, render)

Every protocol charges and retries alike; what differs is passed in: how its request is read (`read`), how the
result is answered (`render`), and, where it can stream, how a streamed answer is sent (`stream`).
"""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ray.serve.handle import DeploymentHandle

from deployments.retry import retry_on_worker_loss
from deployments.types import PipelineRequest, PipelineResult
from serve_app.common.auth import ApiKey
from serve_app.common.charging import Charge
from serve_app.common.dependencies import price_of
from serve_app.common.intake import AudioRequest, Intake
from serve_app.common.services import Services

WorkT = TypeVar("WorkT", bound=AudioRequest)
AnswerT = TypeVar("AnswerT")

Streamer = Callable[[DeploymentHandle[Any], PipelineRequest, Charge], Awaitable[AnswerT]]
"""Starts the pipeline's streamed transcription and answers with the stream, which charges the result when it
ends and removes the spooled input (the intake hands it over)."""


async def transcribe_synchronously(
    services: Services,
    key: ApiKey,
    read: Callable[[Intake], Awaitable[WorkT]],
    render: Callable[[PipelineResult, WorkT, str], AnswerT],
    *,
    stream: Callable[[WorkT], Streamer[AnswerT] | None] | None = None,
    what: str = "a synchronous request",
) -> AnswerT:
    """Read the request (`read`: its body to the intake's spool, validated into the work), transcribe it and
    charge `key` for it at the key's price; the answer is `render(result, work, request_id)`. `stream`, given
    the work, names the streamer that answers it instead (None: the answer is whole). `what` names the request
    in the log when its worker is lost."""
    with Intake(services.config, price_of(key, services.config)) as intake:
        work = await read(intake)
        streamer = stream(work) if stream is not None else None
        pipeline_request = intake.pipeline_request(work, stream_text=streamer is not None)
        charge = intake.charge(services.ledger, key.owner, work)
        if streamer is not None:
            answer = await streamer(services.pipeline, pipeline_request, charge)
            intake.hand_over()  # the stream removes the spooled file when it ends
            return answer
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: services.pipeline.transcribe.remote(pipeline_request), what, attempts=2
        )
        await charge(result)
    return render(result, work, intake.request_id)
