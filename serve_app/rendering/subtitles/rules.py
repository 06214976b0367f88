"""The rules subtitle cues are cut by: the client's (`SubtitleRules`: form fields of the same names, stored with
a job) and the fixed ones subtitlers follow (a cue's shortest time, the pause that ends one, how far a cue's
times may move to be read)."""

from pydantic import BaseModel, Field

MIN_CUE_DURATION_S = 5 / 6
"""A cue shorter than this flickers by; cues are lengthened into free time up to it."""
PAUSE_BREAK_S = 1.5
"""A pause this long between words ends a cue: a subtitle should not hang over silence."""
LEAD_IN_S = 0.25
"""How far before its first word a cue that reads too fast may start, into free time."""
LAG_S = 0.5
"""How far after its first word a cue may start to give the cue before it reading time."""
RESPLIT_REACH = 2
"""How many cues on each side of one that reads too fast may be cut again to give it time."""
TIME_EPSILON_S = 1e-6
"""Times closer than this are equal (sums of float word times)."""


class SubtitleRules(BaseModel):
    """How srt and vtt cues are cut: chosen with the request (form fields of the same names), stored with a job."""

    max_line_width: int = Field(42, ge=1, le=1000, description="At most this many characters a subtitle line.")
    max_line_count: int = Field(2, ge=1, le=10, description="At most this many lines a cue.")
    max_cue_duration_s: float = Field(7.0, ge=1.0, le=60.0, description="At most this many seconds a cue.")
    max_chars_per_second: float = Field(
        20.0, ge=5.0, le=100.0, description="Reading speed: a cue stays up at least its characters / this, where the"
        " time before the next cue allows.",
    )  # fmt: skip
    show_speakers: bool = Field(
        False, description="Show each cue's speaker (`<v speaker_0>` in VTT, `[speaker_0]` in SRT) where known."
    )
    word_highlights: bool = Field(False, description="VTT: time each word inside its cue (karaoke style).")
