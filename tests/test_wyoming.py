"""`stt wyoming`'s parts without the service: audio chunks of any format joined as one 16 kHz mono WAV, and a
connection's events answered over a fake of the service (tests/test_wyoming_service.py: the real one)."""

import asyncio
import io
import wave
from collections.abc import AsyncIterator

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_read_event

from stt_cli.wyoming.handler import Settings, SttEventHandler
from stt_cli.wyoming.server import program_info
from stt_cli.wyoming.service import Service
from stt_cli.wyoming.utterance import Utterance


def test_chunks_of_other_formats_become_16_khz_mono_16_bit() -> None:
    utterance = Utterance(max_seconds=5)
    utterance.add(AudioChunk(rate=8_000, width=2, channels=2, audio=b"\x10\x00\x20\x00" * 8_000))  # 1 s stereo
    utterance.add(AudioChunk(rate=16_000, width=2, channels=1, audio=b"\x00\x00" * 16_000))  # 1 s
    with wave.open(io.BytesIO(utterance.wav())) as framed:
        assert (framed.getframerate(), framed.getnchannels(), framed.getsampwidth()) == (16_000, 1, 2)
        assert abs(framed.getnframes() - 32_000) <= 2
    assert abs(utterance.seconds - 2) < 0.01


class FakeService(Service):
    def __init__(self) -> None:
        super().__init__("http://service.test", "key")
        self.forms: list[dict[str, str]] = []

    async def transcribe(self, wav: bytes, form: dict[str, str]) -> AsyncIterator[str]:
        self.forms.append(form)
        for piece in ("And so", " my fellow", " Americans."):
            yield piece


async def converse(
    events: list[Event], streaming: bool = True, max_seconds: float = 60
) -> tuple[list[Event], FakeService]:
    service = FakeService()
    settings = Settings(service, program_info("http://service.test", ["whisper-1"], ["en"], streaming),
                        ("whisper-1",), streaming, max_seconds)  # fmt: skip
    reader, sent = asyncio.StreamReader(), asyncio.StreamReader()

    class Writer:  # an asyncio.StreamWriter's part the handler uses
        def write(self, data: bytes) -> None:
            sent.feed_data(data)

        def writelines(self, lines: list[bytes]) -> None:
            for line in lines:
                sent.feed_data(line)

        async def drain(self) -> None:
            return None

        def close(self) -> None:
            sent.feed_eof()

    handler = SttEventHandler(settings, reader, Writer())  # type: ignore[arg-type]
    for event in events:
        await handler.handle_event(event)
    handler.writer.close()
    answers = []
    while (answer := await async_read_event(sent)) is not None:
        answers.append(answer)
    return answers, service


def audio(seconds: float) -> list[Event]:
    chunk = AudioChunk(16_000, 2, 1, b"\x01\x00" * int(16_000 * seconds)).event()
    return [AudioStart(16_000, 2, 1).event(), chunk, AudioStop().event()]


def test_an_utterance_is_streamed_then_transcribed_with_its_language_and_bias() -> None:
    request = Transcribe(language="en-US", transcript_names=["Ada"], transcript_terms=["kitchen light"]).event()
    answers, service = asyncio.run(converse([request, *audio(1)]))
    assert [a.type for a in answers] == ["transcript-start", *["transcript-chunk"] * 3, "transcript-stop",
                                         "transcript"]  # fmt: skip
    assert answers[-1].data == {"text": "And so my fellow Americans.", "language": "en-US"}
    assert service.forms == [{"model": "whisper-1", "language": "en", "prompt": "Ada, kitchen light"}]


def test_refusals_are_error_events() -> None:
    answers, _ = asyncio.run(converse([Transcribe(name="other").event(), *audio(1)], streaming=False))
    assert [a.type for a in answers] == ["error"] and "other" in answers[0].data["text"]
    answers, _ = asyncio.run(converse(audio(2), max_seconds=1))
    assert [a.type for a in answers] == ["error"] and "longer than 1 s" in answers[0].data["text"]
    answers, _ = asyncio.run(converse([AudioStart(16_000, 2, 1).event(), AudioStop().event()]))
    assert [a.type for a in answers] == ["error"]
