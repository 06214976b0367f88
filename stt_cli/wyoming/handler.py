"""One Wyoming connection: `describe` answered with the service's models; `transcribe` (optional: a model
`name`, a `language`, names and terms to bias the words), then `audio-start`, `audio-chunk`s and `audio-stop`
answered with `transcript-start`, `transcript-chunk`s and `transcript-stop` as the service streams the text
(when streaming), then the `transcript`. A refusal or failure is an `error` event; the connection stays open
for the next utterance.

Each utterance goes by one transport (`--transport`): `live` opens a realtime session at `transcribe` (or
`audio-start`) and streams the audio as it arrives, `rest` uploads it whole at `audio-stop`."""

import asyncio
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.server import AsyncEventHandler

from stt_cli.api import ApiError
from stt_cli.wyoming.live import LiveFailedError, LiveTranscription, session_update
from stt_cli.wyoming.rest import RestTranscription
from stt_cli.wyoming.service import Service, TranscriptionFailedError
from stt_cli.wyoming.utterance import UtteranceTooLongError

Transport = Literal["live", "rest"]


@dataclass(frozen=True)
class Settings:
    service: Service
    info: Info
    models: tuple[str, ...]
    streaming: bool
    max_seconds: float
    transport: Transport = "live"


class Transcription(Protocol):
    """One utterance on its way to the service (live.py, rest.py)."""

    @property
    def seconds(self) -> float: ...

    def add(self, chunk: AudioChunk) -> None: ...

    async def finish(self) -> str: ...

    async def close(self) -> None: ...


class SttEventHandler(AsyncEventHandler):
    def __init__(self, settings: Settings, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.settings = settings
        self.request = Transcribe()
        self.transcription: Transcription | None = None
        self.refused: Error | None = None
        self.started = False  # transcript-start sent for this utterance
        self.language: str | None = None  # the utterance's, as Home Assistant named it
        self.writing = asyncio.Lock()  # a live session's deltas are written while events are handled

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self._write(self.settings.info.event())
        elif Transcribe.is_type(event.type):
            self.request = Transcribe.from_event(event)
            await self._begin()
        elif AudioStart.is_type(event.type):
            if self.transcription is None or self.transcription.seconds > 0:  # else the one `transcribe` began
                await self._begin()
        elif AudioChunk.is_type(event.type):
            await self._add(AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._answer()
        return True

    async def disconnect(self) -> None:
        await self._drop()

    async def _begin(self) -> None:
        """A new utterance (the one before it, unfinished, dropped), unless its model is refused."""
        await self._drop()
        request, settings = self.request, self.settings
        self.started, self.refused, self.language = False, None, request.language
        if request.name is not None and request.name not in settings.models:
            text = f"unknown model {request.name!r}: this server offers {', '.join(settings.models)}"
            self.refused = Error(text=text, code="unknown_model")
            return
        language = None
        if request.language:  # Home Assistant may send a region too (en-US): Whisper's codes have none
            language = request.language.replace("_", "-").partition("-")[0].lower()
        bias = ", ".join([*(request.transcript_names or []), *(request.transcript_terms or [])]) or None
        if settings.transport == "live":
            service, session = settings.service, session_update(language, bias)
            self.transcription = LiveTranscription(
                service.base_url, service.api_key, session, settings.max_seconds, self._piece, service.timeout_s
            )
        else:
            form = {"model": request.name or settings.models[0], "language": language or "", "prompt": bias or ""}
            form = {field: value for field, value in form.items() if value}
            self.transcription = RestTranscription(settings.service, form, settings.max_seconds, self._piece)

    async def _drop(self) -> None:
        transcription, self.transcription = self.transcription, None
        if transcription is not None:
            await transcription.close()

    async def _add(self, chunk: AudioChunk) -> None:
        if self.transcription is None and self.refused is None:  # no audio-start: its chunks say their format
            await self._begin()
        if self.transcription is None or self.refused is not None:
            return
        try:
            self.transcription.add(chunk)
        except UtteranceTooLongError as error:
            self.refused = Error(text=str(error), code="invalid_audio")
            await self._drop()

    async def _answer(self) -> None:
        transcription, request, refused = self.transcription, self.request, self.refused
        self.transcription, self.request, self.refused = None, Transcribe(), None
        if refused is None and (transcription is None or transcription.seconds == 0):
            refused = Error(text="no audio between audio-start and audio-stop", code="invalid_audio")
        if refused is not None or transcription is None:
            if transcription is not None:
                await transcription.close()
            await self._write((refused or Error(text="no audio", code="invalid_audio")).event())
            return
        try:
            text = await transcription.finish()
        except (ApiError, TranscriptionFailedError, LiveFailedError, httpx.HTTPError) as error:
            detail = error.detail if isinstance(error, ApiError) else str(error) or type(error).__name__
            await self._write(Error(text=f"the service failed the utterance: {detail}", code="failed").event())
            return
        if self.settings.streaming:
            await self._start(request.language)
            await self._write(TranscriptStop().event())
        await self._write(Transcript(text=text, language=request.language).event())

    async def _piece(self, text: str) -> None:
        """A piece of the utterance's text as the service sends it: a `transcript-chunk` when streaming."""
        if self.settings.streaming:
            await self._start(self.language)
            await self._write(TranscriptChunk(text=text).event())

    async def _start(self, language: str | None) -> None:
        if not self.started:
            self.started = True
            await self._write(TranscriptStart(language=language).event())

    async def _write(self, event: Event) -> None:
        async with self.writing:
            await self.write_event(event)
