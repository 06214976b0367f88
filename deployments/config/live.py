"""Live sessions (`live:`): the LiveTranscriber's settings and the limits the Ingress applies to them."""

from typing import Literal

from pydantic import Field

from deployments.config.base import StrictModel

FinalPassWindow = Literal["full", "audio", "none"]
"""How a live utterance is read again when it ends (`LiveConfig.final_pass`)."""


class LiveConfig(StrictModel):
    """Live sessions over WebSocket (`/v1/transcribe`): the LiveTranscriber's settings and the limits the
    Ingress applies to them."""

    max_sessions: int = Field(16, ge=1, description="Sessions one LiveTranscriber replica holds; then 4003.")
    max_sessions_per_key: int = Field(4, ge=1, description="Open sessions per key; then 429.")
    idle_timeout_s: float = Field(30, gt=0, description="Without audio or keepalive this long: close 4008.")
    max_backlog_s: float = Field(
        120, gt=0, description="Audio received but not yet transcribed, per session, beyond which it ends (4009)."
    )
    max_frame_bytes: int = Field(2**20, gt=0, description="Largest binary frame (1 MiB); larger: close 4002.")
    max_buffer_s: float = Field(
        8, ge=5, le=28, description="Audio Whisper re-reads each step; past this it is cut at a committed word."
    )
    encoder_window: Literal["full", "audio"] = Field(
        "audio",
        description="audio (default): each reading encodes only the buffer it reads (at least"
        " whisper.short_window_min_s; a reading that loops or leaves sound unwritten is read again in a window twice"
        " as long, then 30 s): half"
        " the latency of full and four tiny.en sessions on 2 cores, streamed words no further from the file's."
        " full: every reading encodes Whisper's 30 s window (docs: Performance, Live sessions).",
    )
    context_s: float = Field(
        2.0,
        ge=0,
        le=10,
        description="At a pause inside a sentence, the final words of the last context_s before it stay in the buffer,"
        " so that Whisper reads the next words after the ones they follow (those are not repeated); none after a"
        " sentence end, where a short window would often stop after them (docs: Performance, Live sessions).",
    )
    final_pass: FinalPassWindow = Field(
        "full",
        description="full (default): ended utterances gather into groups (a turn's, at most final_group_s of audio),"
        " and each group is read once more, as a file's chunk is (Whisper's 30 s window, the configured beam); that"
        " reading is its final transcript (a turn's text and words, OpenAI's completed, the session's text). The"
        " streamed words are sent as before, the next ones while it runs. Every group is read again while the"
        " replica's sessions keep up (no audio waiting 2 s for its reading, fewer than 4 groups waiting); otherwise"
        " it keeps its streamed words, counted in stt_live_second_readings_total{outcome} and logged for the session."
        " audio: the same in the short encoder window (cheaper, and less accurate than the streamed words: it"
        " loops). none: the final transcript is the streamed words (docs: Performance, Live sessions).",
    )
    final_context_s: float = Field(
        5,
        ge=0,
        le=20,
        description="With a final_pass: audio before a group read with it as context (its words are the previous"
        " group's, not repeated).",
    )
    final_group_s: float = Field(
        12,
        ge=4,
        le=28,
        description="With a final_pass: a group (a turn's utterances) is read again at its turn's end, after 2 s"
        " of silence, or at a pause once it holds this much audio (context included): longer turns are read in"
        " parts, so a turn's end never waits for a reading of much more.",
    )
    min_reading_interval_ms: int = Field(
        960,
        ge=80,
        le=5000,
        description="A session reads its buffer at most this often, however small its delay_ms (which still decides"
        " how long a word must be followed by audio to be final on one reading): each reading re-reads the buffer,"
        " so this is most of what live streaming costs. 960 against 480: a third less compute for a word ~0.2 s"
        " later (docs: Performance, issue 61); 80 lets delay_ms alone decide. After a pause, counted from where the"
        " speech starts.",
    )
    max_reading_interval_ms: int = Field(
        1200,
        ge=80,
        le=5000,
        description="A session reads its buffer every delay_ms of new audio, or less often while its readings come"
        " back slowly (a loaded replica): at least three times the last readings' time apart, at most this much.",
    )
    voice_threshold: float = Field(
        0.55,
        gt=0,
        lt=1,
        description="Cosine similarity of a live speaker's centroid to an enrolled voice (`voices`) from which the"
        " speaker takes its name (as diarization.known_speaker_threshold for files).",
    )
    speaker_threshold: float = Field(
        0.45,
        gt=0,
        lt=1,
        description="Cosine similarity of a word's CAM++ embedding to a speaker's centroid above which the word is"
        " theirs (docs: Performance, Live speaker labels: measured on the development calls and meetings).",
    )
