"""Deepgram's query parameters for a live stream (`wss /v1/listen`), read into the LiveTranscriber's
`SessionSettings` and what the edge itself does (`utterance_end_ms`, `vad_events`, punctuation). A parameter
the service cannot honour is a 400 naming it, answered before the upgrade (the SDK raises it as `ApiError`)."""

from collections.abc import Iterable

from pydantic import BaseModel

from deployments.live.events import SAMPLE_RATES, Encoding, SessionSettings
from deployments.redaction import RedactionOptions
from serve_app.deepgram._params import (
    REFUSED,
    asked,
    asks_nothing,
    bad_request,
    flag,
    offered_model,
    redact_classes,
    vocabulary_of,
    whisper_language,
)

ENCODINGS: dict[str, Encoding] = {"linear16": "pcm_s16le", "mulaw": "pcm_mulaw", "alaw": "pcm_alaw"}
DEFAULT_ENDPOINTING_MS = 220
"""Silence that ends speech (`speech_final`) when `endpointing` is not given: the live VAD's own default, not
Deepgram's 10 ms, which would cut Whisper's window at every breath."""
SHORTEST_ENDPOINTING_MS = 32
LIVE_REFUSED = {
    **{
        name: why
        for name, why in REFUSED.items()
        if name not in ("encoding", "sample_rate", "channels", "multichannel")
    },
    "callback": "live results are sent on the socket; callbacks are for pre-recorded audio",
    "callback_method": "live results are sent on the socket; callbacks are for pre-recorded audio",
    "no_delay": "no_delay is not supported",
}
PASSED = {"mip_opt_out", "interim_results", "tag", "extra"}
"""Accepted and changing nothing: `interim_results` (every Results sent is final: words are sent once they
are, never revised), `tag` and `extra` (labels for usage reports), `mip_opt_out` (nothing is kept)."""


class LiveOptions(BaseModel):
    model: str
    settings: SessionSettings
    punctuated: bool = False
    vad_events: bool = False
    utterance_end_ms: int | None = None
    endpointing: bool = True


def live_options(query: Iterable[tuple[str, str]], models: list[str]) -> LiveOptions:
    given = asked(query, LIVE_REFUSED, PASSED)
    model, encoding, rate, channels = models[0], None, None, 1
    language: str | None = "en"
    multichannel = diarize = punctuated = vad_events = False
    endpointing: int | None = DEFAULT_ENDPOINTING_MS
    utterance_end_ms: int | None = None
    detect = False
    for name, values in given.items():
        last = values[-1]
        match name:
            case "model":
                model = offered_model(last, models)
            case "language":
                language = whisper_language(last)
            case "detect_language":
                detect = flag(name, last)
            case "encoding":
                if last not in ENCODINGS:
                    raise bad_request(f"encoding {last[:32]!r} is not supported live: use {', '.join(ENCODINGS)}")
                encoding = ENCODINGS[last]
            case "sample_rate":
                if not last.isdigit() or int(last) not in SAMPLE_RATES:
                    raise bad_request(f"sample_rate must be one of {', '.join(map(str, SAMPLE_RATES))}")
                rate = int(last)
            case "channels":
                if last not in ("1", "2"):
                    raise bad_request("channels must be 1 or 2")
                channels = int(last)
            case "multichannel":
                multichannel = flag(name, last)
            case "diarize":
                diarize = flag(name, last)
            case "diarize_model":
                if last not in ("latest", "v1"):
                    raise bad_request(f"diarize_model must be latest or v1 for live streams; got {last[:16]!r}")
                diarize = True
            case "punctuate" | "smart_format":
                punctuated = flag(name, last) or punctuated
            case "profanity_filter":
                if flag(name, last):
                    raise bad_request("profanity_filter: not supported on live streams")
            case "vad_events":
                vad_events = flag(name, last)
            case "endpointing":
                endpointing = _endpointing(last)
            case "utterance_end_ms":
                if not last.isdigit() or not 1000 <= int(last) <= 5000:
                    raise bad_request("utterance_end_ms must be a whole number of ms from 1000 to 5000")
                utterance_end_ms = int(last)
            case "version":
                if last != "latest":
                    raise bad_request(f"version: only 'latest' is served; got {last[:32]!r}")
            case "keyterm" | "keywords" | "redact":
                pass  # vocabulary_of, redact_classes
            case _ if not asks_nothing(values):
                raise bad_request(f"{name[:64]}: not a parameter this service supports")
    if encoding is None:
        raise bad_request(f"encoding is required: send raw audio as one of {', '.join(ENCODINGS)}, with sample_rate")
    if rate is None:
        raise bad_request("sample_rate is required with encoding")
    if multichannel and channels != 2:
        raise bad_request("multichannel needs channels=2")
    if detect and "language" not in given:
        language = None
    settings = SessionSettings(
        encoding=encoding,
        sample_rate=rate,
        channels=channels,
        multichannel=multichannel,
        diarize=diarize,
        language=language,
        turn_detection="vad" if endpointing is not None else "manual",
        silence_ms=endpointing if endpointing is not None else DEFAULT_ENDPOINTING_MS,
        vocabulary=vocabulary_of(given),
        redaction=RedactionOptions(classes=redacted)
        if (redacted := redact_classes(given.get("redact", []), language))
        else None,
        read_again=False,  # Deepgram's clients take is_final words as final: no revision reaches them (issue 61)
    )
    return LiveOptions(
        model=model,
        settings=settings,
        punctuated=punctuated,
        vad_events=vad_events,
        utterance_end_ms=utterance_end_ms,
        endpointing=endpointing is not None,
    )


def _endpointing(value: str) -> int | None:
    """ms of silence that end speech; `false`: only Finalize does."""
    if value.strip().lower() in ("false", "0"):
        return None
    if value.strip().lower() == "true":
        return DEFAULT_ENDPOINTING_MS
    if not value.isdigit() or int(value) > 10_000:
        raise bad_request("endpointing must be false or a whole number of ms up to 10000")
    return max(int(value), SHORTEST_ENDPOINTING_MS)
