"""Stand-ins for Ray handles in tests that run without Ray: the same `.method.remote(...)` calls, answered
in the test's own event loop."""

import asyncio
from collections.abc import Callable


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
