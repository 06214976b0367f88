"""The LiveTranscriber's events as Deepgram's live messages.

Final words (`transcript`) are `Results` with `is_final` true (words are sent once final and never revised,
so there are no interim results); a turn's end (a pause of `endpointing` ms) is an empty `Results` with
`speech_final` true; after a `Finalize` (the worker's commit), the words it made final and the turn end it
answers with are one `Results` with `from_finalize` true. Speech starting is `SpeechStarted` (`vad_events`);
`UtteranceEnd` is sent once `utterance_end_ms` of received audio passed after the last word without speech
(`tick`), or at the end of the stream; `Metadata` closes the stream.
"""

from typing import Any

from deployments.live.events import (
    LiveEvent,
    LiveWord,
    SessionEnded,
    SpeechEnded,
    SpeechStarted,
    TranscriptEvent,
    TurnEnded,
)
from serve_app.deepgram._live_params import LiveOptions
from serve_app.deepgram.results import ARCH, bare, created_now, model_uuid


def _s(ms: int | float) -> float:
    return round(ms / 1000, 3)


class ChannelState:
    def __init__(self) -> None:
        self.cursor_ms = 0  # where the next Results starts: the end of the last one
        self.last_word_end_ms: int | None = None  # of words not yet followed by an UtteranceEnd
        self.speaking = False
        self.held: list[LiveWord] = []  # words made final by a Finalize, sent with its answer


class DeepgramEvents:
    def __init__(self, options: LiveOptions, request_id: str, version: str) -> None:
        self.options, self.request_id, self.version = options, request_id, version
        self.created = created_now()
        self.total = options.settings.channels_transcribed
        self.channels = [ChannelState() for _ in range(self.total)]
        self.finalizing = 0  # Finalize messages not yet answered by their turn end
        self.model_id = model_uuid(options.model)

    def finalize(self) -> None:
        """A `Finalize` went to the worker (as a commit): the next turn end answers it."""
        self.finalizing += 1

    def translate(self, event: LiveEvent) -> list[dict[str, Any]]:
        match event:
            case TranscriptEvent(words=words, channel=channel):
                state = self.channels[channel or 0]
                state.last_word_end_ms = words[-1].end if words else state.last_word_end_ms
                if self.finalizing:
                    state.held += words
                    return []
                return [self._results(channel or 0, words, speech_final=False)]
            case SpeechStarted(start=start, channel=channel):
                self.channels[channel or 0].speaking = True
                if self.options.vad_events:
                    return [{"type": "SpeechStarted", "channel": [channel or 0, self.total], "timestamp": _s(start)}]
            case SpeechEnded(channel=channel):
                self.channels[channel or 0].speaking = False
            case TurnEnded(end=end, channel=channel):
                state = self.channels[channel or 0]
                state.speaking = False
                if self.finalizing:
                    self.finalizing -= 1
                    words, state.held = state.held, []
                    return [self._results(channel or 0, words, speech_final=True, end_ms=end, from_finalize=True)]
                if self.options.endpointing:
                    return [self._results(channel or 0, [], speech_final=True, end_ms=end)]
            case SessionEnded(audio_duration_ms=duration):
                return [*self._utterance_ends(None), self._metadata(duration)]
        return []

    def tick(self, heard_ms: float) -> list[dict[str, Any]]:
        """`UtteranceEnd` for each channel whose last word ended `utterance_end_ms` before `heard_ms` (the audio
        received so far) without speech since."""
        return self._utterance_ends(heard_ms)

    def _utterance_ends(self, heard_ms: float | None) -> list[dict[str, Any]]:
        if self.options.utterance_end_ms is None:
            return []
        ends = []
        for index, state in enumerate(self.channels):
            last = state.last_word_end_ms
            if last is None or state.held:
                continue
            if heard_ms is None or (not state.speaking and heard_ms - last >= self.options.utterance_end_ms):
                ends.append({"type": "UtteranceEnd", "channel": [index, self.total], "last_word_end": _s(last)})
                state.last_word_end_ms = None
        return ends

    def _results(
        self,
        channel: int,
        words: list[LiveWord],
        speech_final: bool,
        end_ms: int | None = None,
        from_finalize: bool = False,
    ) -> dict[str, Any]:
        state = self.channels[channel]
        start = state.cursor_ms
        end = max(start, words[-1].end if words else start, end_ms or 0)
        state.cursor_ms = end
        rendered = [self._word(word) for word in words]
        key = "punctuated_word" if self.options.punctuated else "word"
        return {
            "type": "Results",
            "channel_index": [channel, self.total],
            "duration": _s(end - start),
            "start": _s(start),
            "is_final": True,
            "speech_final": speech_final,
            "from_finalize": from_finalize,
            "channel": {
                "alternatives": [
                    {
                        "transcript": " ".join(word[key] for word in rendered),
                        "confidence": 1.0 if rendered else 0.0,
                        "words": rendered,
                    }
                ]
            },
            "metadata": {
                "request_id": self.request_id,
                "model_info": {"name": self.options.model, "version": self.version, "arch": ARCH},
                "model_uuid": self.model_id,
            },
        }

    def _word(self, word: LiveWord) -> dict[str, Any]:
        rendered: dict[str, Any] = {
            "word": bare(word.text),
            "start": _s(word.start),
            "end": _s(max(word.end, word.start)),
            "confidence": 1.0,
        }
        if self.options.punctuated:
            rendered["punctuated_word"] = word.text.strip()
        if word.speaker is not None:
            rendered["speaker"] = word.speaker
        return rendered

    def _metadata(self, duration_ms: int) -> dict[str, Any]:
        return {
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self.request_id,
            "sha256": "",
            "created": self.created,
            "duration": _s(duration_ms),
            "channels": self.options.settings.channels,
            "models": [self.model_id],
            "model_info": {self.model_id: {"name": self.options.model, "version": self.version, "arch": ARCH}},
        }
