"""The edge's forwarding of a live session's audio (`serve_app/sessions/frames.py`), with a fake LiveTranscriber:
frames gathered into at most one push every `PUSH_EVERY_S`, in order, and none held back once someone waits for
them (a commit, the end of input)."""

import asyncio
import time
from typing import Any, cast

from deployments.config import LiveConfig
from deployments.live.events import SessionFailed
from serve_app.sessions import frames as frames_module
from serve_app.sessions.calls import SessionCalls
from serve_app.sessions.frames import ClientFrames
from serve_app.sessions.usage import SessionMeter


class _Calls:
    """The LiveTranscriber's side: what each push carried, and when."""

    def __init__(self) -> None:
        self.pushes: list[tuple[float, bytes]] = []
        self.ended_at: float | None = None

    async def push(self, frames: bytes) -> SessionFailed | None:
        self.pushes.append((time.monotonic(), frames))
        return None

    async def end_input(self) -> None:
        self.ended_at = time.monotonic()


class _Meter:
    def admit(self, frame: bytes) -> bytes:
        return frame


def _frames(calls: _Calls) -> ClientFrames:
    return ClientFrames(cast(Any, None), cast(SessionCalls, calls), LiveConfig(), cast(SessionMeter, _Meter()))


def test_frames_of_a_fast_client_are_pushed_together_in_order() -> None:
    """A client of 20 ms frames made 50 Serve calls a second per session; now at most 1 / PUSH_EVERY_S."""

    async def scenario() -> _Calls:
        calls = _Calls()
        frames = _frames(calls)
        for index in range(50):  # one second of 20 ms frames
            assert await frames.audio(bytes([index]) * 640) is None
            await asyncio.sleep(0.02)
        assert await frames.end_input() is None
        return calls

    calls = asyncio.run(scenario())
    sent = b"".join(frames for _, frames in calls.pushes)
    assert sent == b"".join(bytes([index]) * 640 for index in range(50))  # every byte, in order
    assert 2 <= len(calls.pushes) <= 1.2 / frames_module.PUSH_EVERY_S + 1
    apart = [later - earlier for (earlier, _), (later, _) in zip(calls.pushes, calls.pushes[1:], strict=False)]
    assert all(gap >= frames_module.PUSH_EVERY_S - 0.02 for gap in apart[:-1]), apart  # the last one: at the end
    assert calls.ended_at is not None and calls.ended_at >= calls.pushes[-1][0]


def test_audio_waited_for_is_pushed_at_once() -> None:
    """A commit (OpenAI's, Deepgram's Finalize) and the end of input wait for the audio before them: it goes
    without waiting out the gathering interval."""

    async def scenario() -> tuple[_Calls, float]:
        calls = _Calls()
        frames = _frames(calls)
        await frames.audio(b"\1" * 640)  # pushed at once: the first
        await asyncio.sleep(0.01)
        await frames.audio(b"\2" * 640)  # would wait PUSH_EVERY_S for company
        started = time.monotonic()
        assert await frames.pushed() is None
        return calls, time.monotonic() - started

    calls, waited = asyncio.run(scenario())
    assert [frames[:1] for _, frames in calls.pushes] == [b"\1", b"\2"]
    assert waited < frames_module.PUSH_EVERY_S / 2
