"""One Deepgram live session through the running service with the `deepgram-sdk`'s own socket client, shared by
the service tests that stream one: the audio sent at a pace (real time, or faster to save the suite's time),
Finalize awaited until its Results come back `from_finalize`, then CloseStream and every message received."""

import asyncio
from typing import Any

from deepgram import AsyncDeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from deepgram.listen.v1.types import ListenV1Results

FINALIZE_WAIT_S = 20.0
"""How long to wait for the Finalize's Results, sending KeepAlive meanwhile (the tests' idle timeout is 3 s)."""


async def stream_deepgram_live(
    base_url: str, key: str, pcm: bytes, *, speed: float = 1.0, chunk_s: float = 0.1, **options: Any
) -> list[Any]:
    """Streams 16 kHz linear16 `pcm` in `chunk_s` chunks at `speed` times real time with the connect `options`."""
    websocket = base_url.replace("http", "ws", 1)
    environment = DeepgramClientEnvironment(base=base_url, production=websocket, agent=websocket, agent_rest=base_url)
    client = AsyncDeepgramClient(api_key=key, environment=environment)
    received: list[Any] = []
    async with client.listen.v1.connect(model="nova-3", encoding="linear16", sample_rate=16000, **options) as socket:

        async def listen() -> None:
            async for message in socket:
                received.append(message)

        listening = asyncio.create_task(listen())
        loop = asyncio.get_running_loop()
        started, step, period = loop.time(), int(16_000 * chunk_s) * 2, chunk_s / speed
        for index, offset in enumerate(range(0, len(pcm), step)):
            await socket.send_media(pcm[offset : offset + step])
            await asyncio.sleep(max(0.0, started + (index + 1) * period - loop.time()))
        await socket.send_keep_alive()
        await socket.send_finalize()
        for _ in range(int(FINALIZE_WAIT_S / 0.5)):
            await asyncio.sleep(0.5)
            if any(isinstance(m, ListenV1Results) and m.from_finalize for m in received):
                break
            await socket.send_keep_alive()
        await socket.send_close_stream()
        await asyncio.wait_for(listening, 120)
    return received
