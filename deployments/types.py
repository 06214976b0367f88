"""Values that travel between deployments: decoded audio in, a transcript out."""

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

SAMPLE_RATE = 16_000
"""Every deployment works on 16 kHz mono float32 PCM, the rate Whisper was trained on."""


@dataclass(frozen=True)
class DecodedAudio:
    """16 kHz mono float32 samples in [-1, 1], and where to cut them for Whisper."""

    samples: np.ndarray
    chunks: tuple[tuple[int, int], ...] = ()
    """(start, end) sample ranges of at most 30 s that hold the speech, cut at silences; in time order."""

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


SEGMENT_TIMESTAMPS_DOC = (
    "Decode Whisper's timestamp tokens, which time the segments. Off when the client wants only the text"
    " (json, text): a chunk is then one segment, and decoding does about 15% less work."
)


class TranscriptionOptions(BaseModel):
    """What a client may ask of the Whisper engine for one request."""

    language: str | None = Field(None, description="ISO-639-1 code; detected from the audio when None.")
    word_timestamps: bool = False
    segment_timestamps: bool = Field(True, description=SEGMENT_TIMESTAMPS_DOC)
    prompt: str | None = None
    temperature: float = 0.0


class DiarizationOptions(BaseModel):
    """What a client may ask of the diarization pipeline for one request."""

    num_speakers: int | None = Field(None, ge=1, description="Exact number of speakers, when known.")
    setting: Literal["general", "meeting", "telephonic"] = "general"


class SpeakerTurn(BaseModel):
    """A stretch of time in which a speaker is speaking."""

    speaker: str
    start: float
    end: float


class Diarization(BaseModel):
    """Who speaks when, as a pyannote pipeline says it."""

    turns: list[SpeakerTurn] = Field(description="Every speaker's turns; they overlap where people talk at once.")
    exclusive_turns: list[SpeakerTurn] = Field(
        description="The same with overlaps given to one speaker only: what assigning words to speakers needs."
    )


class ChunkOptions(BaseModel):
    """Decoding options for a chunk; chunks with equal options are decoded in one batch."""

    model_config = ConfigDict(frozen=True)

    language: str | None = Field(
        None, description="ISO-639-1 code; None: detected for each chunk from the same encoder pass that decodes it."
    )
    word_timestamps: bool = False
    segment_timestamps: bool = Field(True, description=SEGMENT_TIMESTAMPS_DOC)
    prompt: str | None = None
    temperature: float = 0.0


class Word(BaseModel):
    word: str
    start: float
    end: float
    prob: float | None = Field(None, description="The word's probability, where the engine computes one.")


class Segment(BaseModel):
    """One Whisper segment, with the fields of OpenAI's verbose_json."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: list[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


class ChunkTranscript(BaseModel):
    """What an engine returns for one chunk; times are seconds from the chunk's start."""

    language: str = Field(description="The language the chunk was decoded in, given or detected.")
    segments: list[Segment]
    words: list[Word] = Field(default_factory=list)


class Transcript(BaseModel):
    """What an engine returns for one piece of audio."""

    language: str
    duration: float
    segments: list[Segment]
    words: list[Word] = Field(default_factory=list, description="Empty unless word timestamps were asked.")

    @property
    def text(self) -> str:
        return "".join(segment.text for segment in self.segments).strip()
