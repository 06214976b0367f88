"""OpenAI realtime transcription sessions through the running service (`/v1/realtime`), with the `openai` SDK's
own realtime client, unchanged but for `base_url` / `websocket_base_url`: pyannote's call streamed at real
time as pcm16 at 24 kHz, deltas while it is still being sent, completed transcripts as good as the file's
(each utterance read again whole when it ends: issue 50), and the errors as OpenAI `error` events."""

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deployments.files.decoding import decode_audio
from devkit import realtime
from devkit.media import JFK_REFERENCE, encode, pyannote_sample
from devkit.prometheus import settled, value
from devkit.realtime import openai_client, pcm24k
from devkit.wer import stm_transcript, word_error_rate
from tests.conftest import API_KEYS, Service

FILE_DISTANCE = 0.06
"""Issue 50: the completed transcripts differ from the file's transcription by at most this share of words."""
JFK_RUNS = 3
READINGS = "ray_stt_live_second_readings_total"

pytestmark = pytest.mark.paced  # see tests/conftest.py: after the other service tests

KEY = "test-key-2"


async def transcription_session(
    service: Service, pcm: bytes, until_completed_s: float | None = None, key: str = KEY
) -> tuple[list[tuple[float, Any]], float]:
    """The server's events with when each came, and when the last audio was sent: the audio at real time in 100 ms
    appends, committed, and the session run until the service's idle timeout (3 s in tests) ends it, or (with
    `until_completed_s`) until every item is completed and nothing more came for that long."""
    return await realtime.transcription_session(service.base_url, key, pcm, until_completed_s)


def test_the_openai_sdk_transcribes_the_call_at_real_time(service: Service) -> None:
    samples = decode_audio(pyannote_sample()).samples
    received, sent_at = asyncio.run(transcription_session(service, pcm24k(samples)))
    events = [event for _, event in received]
    kinds = [event.type for event in events]
    assert kinds[0] == "session.created" and kinds[1] == "session.updated"
    assert events[1].session.audio.input.turn_detection.silence_duration_ms == 500

    deltas = [(at, e) for at, e in received if e.type == "conversation.item.input_audio_transcription.delta"]
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert deltas and deltas[0][0] < sent_at - 5  # words arrive while the audio is still being sent
    assert len(completed) >= 2 and "input_audio_buffer.speech_started" in kinds
    committed = {e.item_id for e in events if e.type == "input_audio_buffer.committed"}
    for item in completed:  # each item: committed after its deltas; its transcript is its second reading
        assert item.item_id in committed and item.content_index == 0

    reference = stm_transcript(pyannote_sample().with_suffix(".stm"))
    with service.client(api_key=KEY) as http:
        filed = http.post("/v1/audio/transcriptions", files={"file": ("call.wav", encode(samples, "wav"))})
    assert filed.status_code == 200, filed.text
    live_text = " ".join(item.transcript for item in completed)
    live_wer, file_wer = word_error_rate(reference, live_text), word_error_rate(reference, filed.json()["text"])
    from_file = word_error_rate(filed.json()["text"], live_text)
    stopped = {e.item_id: at for at, e in received if e.type == "input_audio_buffer.speech_stopped"}
    done_at = {e.item_id: at for at, e in received if e.type.endswith(".completed")}
    lags = [done_at[item] - at for item, at in stopped.items() if item in done_at]
    print(  # the README's figures
        f"\nrealtime WER {live_wer:.3f} vs file {file_wer:.3f} ({from_file:.3f} from the file's words); first delta"
        f" at {deltas[0][0]:.2f} s; completed {np.median(lags):.2f} s (median) after speech_stopped;"
        f" {len(completed)} items"
    )
    # Issue 37's goal is 3 points (measured 2.4, README); one word of the call's 81 is 1.2 points, and a streamed
    # session's words move by a word between runs of the full suite (2.4 or 3.7 points), so the test allows 5.
    assert live_wer <= file_wer + 0.05, (live_wer, file_wer)
    # Issue 50: 1.4% with every utterance read again (11.1% when a loaded machine skipped the second readings,
    # before they ran beside the streaming)
    assert from_file <= FILE_DISTANCE, (from_file, live_text, filed.json()["text"])


def test_jfk_at_real_time_is_within_one_word_of_the_reference_in_every_run(service: Service, jfk_flac: Path) -> None:
    """Issue 50: a sentence that repeats itself ("can do for you ... can do for your"), read from short buffers,
    lost or changed words in 3 of 5 runs; each item's completed transcript is read again whole, also the short
    ones (issue 61: under 4 s they used to keep their streamed words). The runs are sessions at once, a second
    apart: the replica keeps up with them (issue 61's four sessions), and the loop waits for one jfk, not three."""
    pcm = pcm24k(decode_audio(jfk_flac).samples)
    metrics = service.process.metrics_url()
    before = settled(metrics, {"outcome"}, 2.0)

    async def run(index: int) -> list[Any]:
        await asyncio.sleep(index)
        key = API_KEYS[index % 2]  # two sessions at once per key (the tests' live.max_sessions_per_key)
        received, _ = await transcription_session(service, pcm, until_completed_s=1.0, key=key)
        return [e for _, e in received if e.type == "conversation.item.input_audio_transcription.completed"]

    async def runs() -> list[list[Any]]:
        return await asyncio.gather(*(run(index) for index in range(JFK_RUNS)))

    rates, items = [], 0
    for completed in asyncio.run(runs()):
        text = " ".join(item.transcript for item in completed)
        rates.append((word_error_rate(JFK_REFERENCE, text), text))
        assert all(item.transcript for item in completed), text  # the commit after the last word opens no item
        items += len(completed)
    read = value(settled(metrics, {"outcome"}, 2.0), READINGS, outcome="read") - value(before, READINGS, outcome="read")
    assert read == items  # every item (a turn at each 500 ms pause, most under 4 s) read again: issue 61
    print(f"\njfk WER per run: {[round(rate, 3) for rate, _ in rates]}: {[text for _, text in rates]}")
    assert all(rate <= 0.05 for rate, _ in rates), rates  # 22 words: one wrong word is 0.045


async def first_error(service: Service, key: str, events: list[dict]) -> Any:
    client = openai_client(service.base_url, key)
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
        for event in events:
            await connection.send(event)  # type: ignore[arg-type]  # some are wrong on purpose
        deadline = time.monotonic() + 30
        async for answer in connection:
            if answer.type == "error" or time.monotonic() > deadline:
                return answer
    return None


MP3_FORMAT = {"type": "transcription", "audio": {"input": {"format": {"type": "audio/mp3"}}}}
OVERSIZED = base64.b64encode(b"\0" * (2**20 + 2)).decode()
"""More audio than one append may carry (the service's max_frame_bytes, 1 MiB)."""


@pytest.mark.parametrize(
    ("key", "events", "code"),
    [
        ("not-a-key", [], "invalid_api_key"),
        (KEY, [{"type": "session.update", "session": MP3_FORMAT}], "invalid_value"),
        (KEY, [{"type": "input_audio_buffer.append", "audio": OVERSIZED}], "message_too_large"),
    ],
)
def test_errors_are_openai_error_events(service: Service, key: str, events: list[dict], code: str) -> None:
    error = asyncio.run(first_error(service, key, events))
    assert error is not None and error.type == "error" and error.error.code == code and error.error.message
