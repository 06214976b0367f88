"""The models a live session calls, as three async callables: Whisper on the Transcriber, the speaker encoder
on the Diarizer, Smart Turn on the LiveTranscriber. Passed in, so that tests drive a session with fakes."""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from deployments.config import VocabularyConfig
from deployments.live.events import LiveEvent, LiveWord, TranscriptEvent
from deployments.types import ChunkOptions, ChunkTranscript

Transcribe = Callable[[np.ndarray, ChunkOptions], Awaitable[ChunkTranscript]]
EmbedVoices = Callable[[list[np.ndarray]], Awaitable[np.ndarray]]
TurnProbability = Callable[[np.ndarray], Awaitable[float]]

FinalWords = tuple[str, list[LiveWord]]
"""An utterance's final transcript: its text and words."""
Emitted = LiveEvent | asyncio.Task[LiveEvent] | asyncio.Task[list[TranscriptEvent]]
"""An event, or events not ready yet: a turn's end waiting for its utterances' second readings, the last words
of the input waiting for theirs."""
Emit = Callable[[Emitted], None]
"""How a channel sends its events, in order: the events after a task wait for it."""


@dataclass(frozen=True)
class LiveModels:
    transcribe: Transcribe
    embed_voices: EmbedVoices
    turn_probability: TurnProbability
    reread: Transcribe | None = None
    """Second readings (`_final_pass.py`), scheduled apart from the streaming ones; None: `transcribe`."""
    vocabulary: VocabularyConfig = field(default_factory=VocabularyConfig)
    """The dictionaries a session's vocabulary may name, and how its terms are applied."""
