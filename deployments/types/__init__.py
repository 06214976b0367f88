"""Values that travel between deployments and actors: a request in, a transcript out. The HTTP edge
renders these domain objects; workers never build HTTP bodies. The speakers' values (`_speakers.py`) and the
analysis' (`_analysis.py`) are kept apart and exported from here: import everything from `deployments.types`."""

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from deployments.redaction.options import RedactionOptions
from deployments.types._analysis import Analysis as Analysis
from deployments.types._analysis import AnalysisOptions as AnalysisOptions
from deployments.types._analysis import Emotion as Emotion
from deployments.types._speakers import Diarization as Diarization
from deployments.types._speakers import DiarizationOptions as DiarizationOptions
from deployments.types._speakers import DiarizationSetting as DiarizationSetting
from deployments.types._speakers import KnownSpeaker as KnownSpeaker
from deployments.types._speakers import KnownVoice as KnownVoice
from deployments.types._speakers import SpeakerTurn as SpeakerTurn
from deployments.types._speakers import VoicePrint as VoicePrint
from deployments.vocabulary.terms import Vocabulary

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


WhisperTask = Literal["transcribe", "translate"]
"""Whisper's two tasks: transcribe the speech in its own language, or translate it into English text."""
TASK_DOC = (
    "transcribe: the text in the language spoken. translate: Whisper's translation into English (the language is"
    " still detected, and each chunk decoded from its own); a multilingual model only."
)

SEGMENT_TIMESTAMPS_DOC = (
    "Time the segments (by aligning the words, or by Whisper's timestamp tokens: the engine's `timestamps`"
    " setting). Off when the client wants only the text (json, text): a chunk is then one untimed segment."
)


CHANNEL_DOC = "The audio channel it was heard on (multichannel only; absent otherwise)."


def _absent(value: object) -> bool:
    return value is None


def _one(value: object) -> bool:
    return value == 1


class TranscriptionOptions(BaseModel):
    """What a client may ask of the Whisper engine for one request."""

    language: str | None = Field(None, description="ISO-639-1 code; detected from the audio when None.")
    task: WhisperTask = Field("transcribe", description=TASK_DOC)
    word_timestamps: bool = False
    segment_timestamps: bool = Field(True, description=SEGMENT_TIMESTAMPS_DOC)
    multichannel: bool = Field(
        False, description="Each channel transcribed on its own, segments and words tagged with their channel."
    )
    prompt: str | None = None
    temperature: float = 0.0
    profanity_filter: bool = Field(
        False, description="Mask profane words in the result (deployments/files/_profanity.py)."
    )
    speech_detection: "SpeechDetection | None" = Field(
        None,
        description="The VAD settings to cut this file's chunks with (OpenAI's chunking_strategy); None: the"
        " configured chunking.",
    )
    vocabulary: Vocabulary | None = Field(
        None, description="Terms the recording will contain: Whisper's prompt is biased to them, and words corrected."
    )
    redaction: RedactionOptions | None = Field(
        None, description="Entities to hide in the result, everywhere its words appear (deployments/redaction/)."
    )


class SpeechDetection(BaseModel):
    """Silero VAD settings for one file's chunking, from OpenAI's `chunking_strategy` server_vad object: where
    speech is found decides where chunks are cut and what silence is skipped."""

    threshold: float = Field(0.5, gt=0, lt=1, description="Speech probability above which a window is speech.")
    prefix_padding_ms: int = Field(200, ge=0, description="Audio kept around each stretch of speech.")
    silence_duration_ms: int = Field(100, ge=0, description="A pause at least this long ends a stretch of speech.")


class ChunkOptions(BaseModel):
    """Decoding options for a chunk; chunks with equal options are decoded in one batch."""

    model_config = ConfigDict(frozen=True)

    language: str | None = Field(
        None, description="ISO-639-1 code; None: detected for each chunk from the same encoder pass that decodes it."
    )
    task: WhisperTask = Field("transcribe", description=TASK_DOC)
    word_timestamps: bool = False
    segment_timestamps: bool = Field(True, description=SEGMENT_TIMESTAMPS_DOC)
    prompt: str | None = None
    temperature: float = 0.0
    beam_size: int | None = Field(
        None, ge=1, description="None: the engine's configured beam. Live sessions decode greedily (1): sooner words."
    )
    encoder_window: Literal["full", "audio"] = Field(
        "full",
        description="full: Whisper's 30 s window, the chunk padded with silence. audio: a window only as long as the"
        " chunk (see WhisperModelConfig.short_window_min_s), several times cheaper for short chunks; a transcript"
        " that then repeats itself is decoded again in a window twice as long (at least 10 s), then in the full window."
        " The transformers engine always uses full.",
    )
    shortest_window_s: float | None = Field(
        None, description="With encoder_window audio: the shortest window (None: whisper.short_window_min_s)."
    )


class BatchHints(BaseModel):
    """How the Transcriber should schedule one chunk among the others (its lanes and batches); they change
    no word of the chunk's transcript. One object, so that every caller says the same things the same way."""

    model_config = ConfigDict(frozen=True)

    interactive: bool = Field(
        False,
        description="Someone waits for this chunk now (a synchronous request, a live session): not a job's lane.",
    )
    second_reading: bool = Field(
        False,
        description="A live utterance's second reading (long, beam search): a lane of its own, beside the sessions'"
        " streaming readings, which would wait for it in a batch with it (Transcriber second_readings_batch_size).",
    )
    more_coming: bool = Field(
        False, description="The sender has more chunks for this lane on their way: an idle engine waits for them."
    )
    sender: str | None = Field(
        None, description="Whose chunk this is (one file's run), so that senders take turns; None: a turn of its own."
    )


class Word(BaseModel):
    word: str
    start: float
    end: float
    prob: float | None = Field(None, description="The word's probability, where the engine computes one.")
    channel: int | None = Field(None, description=CHANNEL_DOC, exclude_if=_absent)


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
    language: str | None = Field(
        None, description="ISO-639-1 code of the language the segment was decoded in (its chunk's), in a file's result."
    )
    channel: int | None = Field(None, description=CHANNEL_DOC, exclude_if=_absent)


class ComputeSeconds(BaseModel):
    """Engine seconds spent on one chunk, by stage: its share of its batch's time (the batch's seconds over its
    chunks). What live readings cost against a file's reading is read from these (issue 61)."""

    model_config = ConfigDict(frozen=True)

    features: float = 0.0
    encoder: float = 0.0
    decoder: float = Field(0.0, description="Language detection and decoding (transformers: its whole generate).")
    alignment: float = Field(0.0, description="Word times from the cross-attention (one more decoder pass).")

    @property
    def total(self) -> float:
        return self.features + self.encoder + self.decoder + self.alignment

    def __add__(self, other: "ComputeSeconds") -> "ComputeSeconds":
        return ComputeSeconds(
            features=self.features + other.features,
            encoder=self.encoder + other.encoder,
            decoder=self.decoder + other.decoder,
            alignment=self.alignment + other.alignment,
        )

    def share(self, items: int) -> "ComputeSeconds":
        return ComputeSeconds(
            features=self.features / items,
            encoder=self.encoder / items,
            decoder=self.decoder / items,
            alignment=self.alignment / items,
        )


class ChunkTranscript(BaseModel):
    """What an engine returns for one chunk; times are seconds from the chunk's start."""

    language: str = Field(description="The language the chunk was decoded in, given or detected.")
    language_probability: float | None = Field(
        None,
        description="How sure the detection was (0-1); None when the language was given or the engine does not say.",
    )
    segments: list[Segment]
    words: list[Word] = Field(default_factory=list)
    compute: ComputeSeconds = Field(default_factory=ComputeSeconds, description="What reading it cost the engine.")


class Transcript(BaseModel):
    """The transcript of one file: chunk transcripts put back on the file's timeline."""

    task: Literal["transcribe"] = "transcribe"
    language: str
    duration: float
    segments: list[Segment]
    words: list[Word] = Field(default_factory=list, description="Empty unless word timestamps were asked.")
    analysis: "Analysis | None" = Field(None, description="What the Analyzer found, when the request asked for any.")
    channels: int = Field(
        1, description="Channels transcribed, each on its own (multichannel); 1 otherwise.", exclude_if=_one
    )

    @property
    def text(self) -> str:
        return "".join(segment.text for segment in self.segments).strip()

    @property
    def billed_seconds(self) -> float:
        """What the transcript is charged as: each channel transcribed is charged (as Deepgram's multichannel)."""
        return self.duration * self.channels


class SpeakerSummary(BaseModel):
    speaker: str = Field(description="The speaker's label: speaker_0, speaker_1, ... in order of first appearance.")
    speaking_time: float = Field(description="Seconds this speaker speaks, overlapped speech included.")
    channel: int | None = Field(None, description=CHANNEL_DOC, exclude_if=_absent)


class DiarizedWord(Word):
    speaker: str


class SegmentDecoding(BaseModel):
    """How Whisper decoded the segment a speaker's stretch mostly comes from: verbose_json's per-segment
    figures, for clients that read a diarized transcript as verbose_json (the nexara SDK's LLMResult)."""

    seek: int
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


class DiarizedSegment(BaseModel):
    """One speaker's stretch of speech."""

    id: int
    start: float
    end: float
    text: str
    speaker: str
    words: list[DiarizedWord] = Field(default_factory=list, description="The segment's words, with its speaker.")
    channel: int | None = Field(None, description=CHANNEL_DOC, exclude_if=_absent)
    decoding: SegmentDecoding | None = Field(
        None, description="The Whisper segment this stretch overlaps most: its decoding figures."
    )


class DiarizedTranscript(BaseModel):
    """The result of task=diarize: the transcript split into speakers' segments, and who speaks when."""

    task: Literal["diarize"] = "diarize"
    text: str
    language: str
    duration: float
    speakers: list[SpeakerSummary] = Field(description="In order of first appearance; empty for silence.")
    segments: list[DiarizedSegment]
    words: list[DiarizedWord] = Field(default_factory=list, description="Every word, with its speaker.")
    turns: list[SpeakerTurn] = Field(
        default_factory=list,
        description="Who speaks when, as the diarizer found it: overlapping where people talk at once.",
    )
    analysis: "Analysis | None" = Field(None, description="What the Analyzer found, when the request asked for any.")
    channels: int = Field(
        1, description="Channels transcribed, each on its own (multichannel); 1 otherwise.", exclude_if=_one
    )

    @property
    def billed_seconds(self) -> float:
        """What the transcript is charged as: each channel transcribed is charged (as Deepgram's multichannel)."""
        return self.duration * self.channels


PipelineResult = Annotated[Transcript | DiarizedTranscript, Field(discriminator="task")]
"""What the pipeline returns for a file: a transcript, or with task=diarize a diarized transcript."""


class PipelineRequest(BaseModel):
    """One file for the pipeline: where it is spooled (or the URL to fetch into that place), and the
    client's choices. The same for synchronous requests and jobs."""

    source_path: str = Field(description="The spooled upload, or where a `url` is fetched to.")
    url: str | None = Field(None, description="Fetched into source_path first.")
    max_bytes: int = Field(description="The size limit for a fetched URL: the upload limit of the request's mode.")
    options: TranscriptionOptions
    diarization: DiarizationOptions | None = Field(None, description="Set for task=diarize.")
    stream_text: bool = Field(
        False, description="Stream each chunk's text as it is final, in timeline order (`transcribe_streaming`)."
    )
    interactive: bool = Field(
        False,
        description="A client is waiting on the connection (a synchronous request): its chunks go ahead of jobs'.",
    )
    analysis: "AnalysisOptions | None" = Field(
        None, description="What the Analyzer should do with the transcript (deployments/analysis/); None: nothing."
    )


class PipelineProgress(BaseModel):
    """Streamed by the pipeline while it works: the share of the audio's chunks transcribed so far."""

    share: float = Field(ge=0, le=1)


class PipelineText(BaseModel):
    """Streamed by the pipeline when `stream_text` is set: the next piece of the transcript's text, final, in
    timeline order; joined, the pieces are the result's text."""

    text: str


EMOTION_LABELS: tuple[str, ...] = ("angry", "sad", "neutral", "positive")
"""The labels an emotion can have (the nexara API's set)."""


TranscriptionOptions.model_rebuild()
Transcript.model_rebuild()
DiarizedTranscript.model_rebuild()
PipelineRequest.model_rebuild()
