"""OpenAI realtime transcription sessions with the `openai` SDK's own client, for tests and benchmarks: audio sent
at real time as pcm16 at 24 kHz in 100 ms appends, then committed; the server's events with when each came."""

import asyncio
import base64
from typing import Any

import numpy as np
import soxr
from openai import AsyncOpenAI
from openai.types.realtime import RealtimeTranscriptionSessionCreateRequestParam

CHUNK_S = 0.1
COMPLETED = "conversation.item.input_audio_transcription.completed"
SESSION: RealtimeTranscriptionSessionCreateRequestParam = {
    "type": "transcription",
    "audio": {
        "input": {
            "format": {"type": "audio/pcm", "rate": 24000},
            "transcription": {"model": "gpt-4o-transcribe"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 500},
        }
    },
}


def openai_client(base_url: str, key: str) -> AsyncOpenAI:
    websocket = base_url.replace("http", "ws", 1) + "/v1"
    return AsyncOpenAI(api_key=key, base_url=f"{base_url}/v1", websocket_base_url=websocket)


def pcm24k(samples: np.ndarray) -> bytes:
    """16 kHz float samples as OpenAI's pcm16 at 24 kHz."""
    resampled: np.ndarray = soxr.resample(samples, 16_000, 24_000)
    pcm: bytes = (np.clip(resampled, -1, 1) * 32767).astype("<i2").tobytes()
    return pcm


async def transcription_session(
    base_url: str,
    key: str,
    pcm: bytes,
    until_completed_s: float | None = None,
    session: RealtimeTranscriptionSessionCreateRequestParam = SESSION,
    speed: float = 1.0,
) -> tuple[list[tuple[float, Any]], float]:
    """The server's events with when each came (seconds since the first audio), and when the last audio was sent
    (`speed` times faster than real time).

    `until_completed_s` None: after the commit, the session runs until the server ends it (its idle timeout ends
    input); else the client closes once every committed item is completed and nothing more came for that long (at
    most 60 s)."""
    client = openai_client(base_url, key)
    received: list[tuple[float, Any]] = []
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
        await connection.session.update(session=session)
        loop = asyncio.get_running_loop()
        started = loop.time()

        async def listen() -> None:
            async for event in connection:
                received.append((loop.time() - started, event))

        listening = asyncio.create_task(listen())
        step = int(24_000 * CHUNK_S) * 2
        for index, offset in enumerate(range(0, len(pcm), step)):
            await connection.input_audio_buffer.append(audio=base64.b64encode(pcm[offset : offset + step]).decode())
            await asyncio.sleep(max(0.0, started + (index + 1) * CHUNK_S / speed - loop.time()))
        sent_at = loop.time() - started
        await connection.input_audio_buffer.commit()
        try:
            if until_completed_s is None:  # the server closes the session (its idle timeout's 4008)
                await asyncio.wait_for(listening, 120)
            else:
                await _until_completed(received, loop, started, until_completed_s)
        except Exception:
            pass
        finally:
            listening.cancel()
    return received, sent_at


async def _until_completed(
    received: list[tuple[float, Any]], loop: asyncio.AbstractEventLoop, started: float, quiet_s: float
) -> None:
    """Until every item the server started (speech it heard) or committed has its completed transcript and no
    event came for `quiet_s` (at most 60 s). A server behind the audio answers a turn's end seconds later than
    its start: a quiet stretch after one item's completion is not the end while the next one's speech has
    started (a session on a loaded machine was closed before its second speaker's turn was transcribed)."""
    deadline = loop.time() + 60
    while loop.time() < deadline:
        await asyncio.sleep(0.1)
        committed = {
            e.item_id
            for _, e in received
            if e.type in ("input_audio_buffer.committed", "input_audio_buffer.speech_started")
        }
        completed = {e.item_id for _, e in received if e.type == COMPLETED}
        quiet = loop.time() - started - (received[-1][0] if received else 0.0) >= quiet_s
        if committed and committed <= completed and quiet:
            return
