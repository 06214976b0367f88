"""Calls to another replica that outlive that replica's death.

Clusters lose workers routinely: a replica crashes or is killed, a node is preempted, a redeploy replaces
replicas. Serve starts a replacement and its handle waits for it, so a call that failed because its
worker went away can simply be sent again. Only that kind of failure is retried here: an error about the
input, or a bug, fails the same way every time and goes straight to the caller.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ray import exceptions as ray_errors

logger = logging.getLogger("ray.serve")

T = TypeVar("T")

WORKER_LOSS: tuple[type[Exception], ...] = (
    ray_errors.RayActorError,  # the replica or actor died, or cannot be reached (ActorDiedError, ...)
    ray_errors.WorkerCrashedError,
    ray_errors.NodeDiedError,
    ray_errors.ObjectLostError,  # an argument or result lived on the worker that went away
)


def worker_lost(error: BaseException) -> bool:
    """Whether `error` says the worker doing the work went away (also when Ray wrapped it in a task error
    on its way through another replica), as opposed to the work itself failing."""
    cause = getattr(error, "cause", None)
    return isinstance(error, WORKER_LOSS) or isinstance(cause, WORKER_LOSS)


async def retry_on_worker_loss(
    call: Callable[[], Awaitable[T]], what: str, attempts: int = 3, first_delay_s: float = 1.0
) -> T:
    """`await call()`, sent again (up to `attempts` in all, waiting 1 s, 2 s, ... between) when the worker
    running it was lost. `call` must start a new request each time it is called."""
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except Exception as error:
            if attempt == attempts or not worker_lost(error):
                raise
            delay = first_delay_s * 2 ** (attempt - 1)
            logger.warning("%s: its worker was lost (%s); sending it again in %.0f s", what, type(error).__name__,
                           delay)  # fmt: skip
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
