"""One Wyoming connection: `describe` answered with the service's models; `transcribe` (optional: a model
`name`, a `language`, names and terms to bias the words), then `audio-start`, `audio-chunk`s and `audio-stop`
answered with `transcript-start`, `transcript-chunk`s and `transcript-stop` as the service streams the text
(when streaming), then the `transcript`. A refusal or failure is an `error` event; the connection stays open
for the next utterance."""

import asyncio
from dataclasses import dataclass

import httpx
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.server import AsyncEventHandler

from stt_cli.api import ApiError
from stt_cli.wyoming.service import Service, TranscriptionFailedError
from stt_cli.wyoming.utterance import Utterance, UtteranceTooLongError


@dataclass(frozen=True)
class Settings:
    service: Service
    info: Info
    models: tuple[str, ...]
    streaming: bool
    max_seconds: float


class SttEventHandler(AsyncEventHandler):
    def __init__(self, settings: Settings, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.settings = settings
        self.request = Transcribe()
        self.utterance: Utterance | None = None
        self.refused: str | None = None

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(self.settings.info.event())
        elif Transcribe.is_type(event.type):
            self.request = Transcribe.from_event(event)
        elif AudioStart.is_type(event.type):
            self.utterance, self.refused = Utterance(self.settings.max_seconds), None
        elif AudioChunk.is_type(event.type):
            self._add(AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._answer()
        return True

    def _add(self, chunk: AudioChunk) -> None:
        if self.utterance is None:  # audio without audio-start: its chunks say their format
            self.utterance = Utterance(self.settings.max_seconds)
        if self.refused is None:
            try:
                self.utterance.add(chunk)
            except UtteranceTooLongError as error:
                self.refused = str(error)

    async def _answer(self) -> None:
        utterance, request, refused = self.utterance, self.request, self.refused
        self.utterance, self.request, self.refused = None, Transcribe(), None
        if refused is None and (utterance is None or utterance.seconds == 0):
            refused = "no audio between audio-start and audio-stop"
        if refused is not None or utterance is None:
            await self.write_event(Error(text=refused or "no audio", code="invalid_audio").event())
            return
        if request.name is not None and request.name not in self.settings.models:
            text = f"unknown model {request.name!r}: this server offers {', '.join(self.settings.models)}"
            await self.write_event(Error(text=text, code="unknown_model").event())
            return
        try:
            await self._transcribe(utterance, request)
        except (ApiError, TranscriptionFailedError, httpx.HTTPError) as error:
            text = error.detail if isinstance(error, ApiError) else str(error) or type(error).__name__
            await self.write_event(Error(text=f"the service failed the utterance: {text}", code="failed").event())

    async def _transcribe(self, utterance: Utterance, request: Transcribe) -> None:
        form = {"model": request.name or self.settings.models[0]}
        if request.language:  # Home Assistant may send a region too (en-US): Whisper's codes have none
            form["language"] = request.language.replace("_", "-").partition("-")[0].lower()
        bias = [*(request.transcript_names or []), *(request.transcript_terms or [])]
        if bias:
            form["prompt"] = ", ".join(bias)
        started, pieces = False, []
        async for piece in self.settings.service.transcribe(utterance.wav(), form):
            pieces.append(piece)
            if self.settings.streaming:
                if not started:
                    await self.write_event(TranscriptStart(language=request.language).event())
                    started = True
                await self.write_event(TranscriptChunk(text=piece).event())
        if self.settings.streaming:
            if not started:
                await self.write_event(TranscriptStart(language=request.language).event())
            await self.write_event(TranscriptStop().event())
        await self.write_event(Transcript(text="".join(pieces).strip(), language=request.language).event())
