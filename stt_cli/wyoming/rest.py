"""One utterance by the REST API: its audio kept as 16 kHz mono as it arrives, uploaded at `audio-stop` as one
WAV file (`POST /v1/audio/transcriptions`, `stream=true`), its text passed to `on_piece` as the service
streams it."""

from collections.abc import Awaitable, Callable

from wyoming.audio import AudioChunk

from stt_cli.wyoming.service import Service
from stt_cli.wyoming.utterance import Utterance


class RestTranscription:
    def __init__(
        self, service: Service, form: dict[str, str], max_seconds: float, on_piece: Callable[[str], Awaitable[None]]
    ) -> None:
        self.service, self.form, self.on_piece = service, form, on_piece
        self.utterance = Utterance(max_seconds)

    @property
    def seconds(self) -> float:
        return self.utterance.seconds

    def add(self, chunk: AudioChunk) -> None:
        self.utterance.add(chunk)

    async def finish(self) -> str:
        pieces = []
        async for piece in self.service.transcribe(self.utterance.wav(), self.form):
            pieces.append(piece)
            await self.on_piece(piece)
        return "".join(pieces).strip()

    async def close(self) -> None:
        return None
