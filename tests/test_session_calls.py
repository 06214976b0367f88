"""The calls of one live session never route together (`serve_app/sessions/calls.py`): of two calls of one
session routing at once, the session router would leave one unanswered forever."""

import asyncio
from typing import Any

from serve_app.sessions.calls import SessionCalls


class _Method:
    def __init__(self, handle: "_Handle", name: str) -> None:
        self.handle, self.name = handle, name

    def remote(self, *args: Any) -> Any:
        return self.handle.call(self.name, args)


class _Handle:
    """A LiveTranscriber handle whose calls take a while, counting how many are in flight at once."""

    def __init__(self) -> None:
        self.in_flight = self.most_in_flight = 0
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> _Method:
        return _Method(self, name)

    async def call(self, name: str, args: tuple[Any, ...]) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.calls.append((name, args))
        self.in_flight -= 1


def test_the_heartbeat_a_commit_and_the_audio_go_one_at_a_time() -> None:
    async def run() -> _Handle:
        handle = _Handle()
        calls = SessionCalls(handle, "sess_a_b")  # type: ignore[arg-type]  # a fake handle
        await asyncio.gather(
            *(calls.push(bytes([n])) for n in range(3)), calls.touch(), calls.commit(), calls.end_input()
        )
        await calls.close()
        return handle

    handle = asyncio.run(run())
    assert handle.most_in_flight == 1
    assert [name for name, _ in handle.calls].count("push") == 3 and handle.calls[-1] == ("close", ("sess_a_b",))
    assert all(args[0] == "sess_a_b" for _, args in handle.calls)
