"""Stand-ins for Ray handles in tests that run without Ray: the same `.method.remote(...)` calls, answered
in the test's own event loop."""

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from ray.serve import Deployment

T = TypeVar("T")


class Remote:
    """`obj.method.remote(...)` as on a Ray handle, calling `function` (sync or async)."""

    def __init__(self, function: Callable) -> None:
        self.function = function

    async def remote(self, *args: object) -> object:
        result = self.function(*args)
        return await result if asyncio.iscoroutine(result) else result


class Actor:
    """Every method of `target` as `.method.remote()`, like an actor handle."""

    def __init__(self, target: object) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Remote:
        return Remote(getattr(self._target, name))


def replica_class(deployment: type[T]) -> type[T]:
    """The class under `@serve.deployment`, to build a replica without Serve: at run time the decorated name is
    a `Deployment` whose `func_or_class` is that class, while mypy keeps the class's own type for the name."""
    return cast(type[T], cast("Deployment", deployment).func_or_class)
