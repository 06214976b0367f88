"""The session's events going out: each sent as a JSON text frame as it comes; the last one closes the socket."""

import asyncio
from collections.abc import Callable
from typing import Any

from ray.serve.handle import DeploymentResponseGenerator

from deployments.live.events import LiveEvent, SessionEnded, SessionFailed
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.socket import ClientSocket


def as_sent(event: LiveEvent) -> list[dict[str, Any]]:
    """The nexara protocol sends each event as the LiveTranscriber yields it."""
    return [event.model_dump(exclude_none=True)]


async def relay_events(
    events: DeploymentResponseGenerator[Any],
    socket: ClientSocket,
    frames: ClientFrames,
    translate: Callable[[LiveEvent], list[dict[str, Any]]] = as_sent,
) -> None:
    """`session.ended` closes normally, unless the money ran out (then `insufficient_balance`); a failure
    event, or the stream's end without either, closes with its code. Each event goes out as `translate`
    writes it in the session's protocol."""
    try:
        async for event in events:
            if isinstance(event, SessionEnded):
                if frames.failure_at_end is not None:
                    return await socket.close_with(frames.failure_at_end)
                for payload in translate(event):
                    await socket.send(payload)
                return await socket.close(1000)
            if isinstance(event, SessionFailed):
                return await socket.close_with(event)
            for payload in translate(event):
                await socket.send(payload)
    except asyncio.CancelledError:
        raise
    except Exception as error:  # the LiveTranscriber's replica died mid-session
        return await socket.close_with(SessionFailed(code="internal", message=f"the session was lost: {error}"))
    pushed = await frames.pushed()  # it holds why, if a failed push ended the session
    await socket.close_with(pushed or SessionFailed(code="internal", message="the session ended unexpectedly"))
