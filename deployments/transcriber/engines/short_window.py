"""What tells a reading in a short encoder window that failed: Whisper read in a window shorter than the 30 s it
was trained on sometimes loops, or stops early and skips a stretch. Such a chunk is read again in a longer window
(`RETRY_WINDOW_*`), then in 30 s if it fails there too, unless the loop is only words written again into the silence
after the audio (`without_loop_after_audio`)."""

import re

import numpy as np
from faster_whisper.transcribe import get_compression_ratio

from deployments.types import SAMPLE_RATE, ChunkTranscript

COMPRESSION_RATIO_THRESHOLD = 2.4
"""Whisper's: a transcript whose text gzip compresses more than this has looped."""

MAX_TOKENS_PER_S = 10
"""Twice the tokens of fast speech: the most a short window's decode may produce."""
MAX_WORDS_PER_S = 5.0
"""Faster than anyone speaks (conversation runs at 2-3.5 words a second): a short window's transcript this dense
repeats itself."""
RETRY_WINDOW_FACTOR = 2
RETRY_WINDOW_MIN_S = 10
"""A failed short-window reading is read again in a window this many times as long, at least this many seconds:
offline over 13 recordings (tiny.en), live streaming's encoder time fell by a third with the words as close to the
file's (docs: Performance, issue 61)."""
LOOP_REPEATS = 4
"""A phrase of up to four words said this many times in a row ("hello hello hello hello") is a loop, not speech."""


def repeats_itself(transcript: ChunkTranscript, samples: int) -> bool:
    """Whisper read in a window shorter than the 30 s it was trained on sometimes loops: its text compresses more
    than 2.4 times (Whisper's own test), holds more words than the chunk's time could, or says a phrase over and
    over."""
    text = "".join(segment.text for segment in transcript.segments)
    words = re.sub(r"[^\w' ]", " ", text.lower()).split()
    too_many_words = len(words) > MAX_WORDS_PER_S * samples / SAMPLE_RATE + 3
    return too_many_words or get_compression_ratio(text) > COMPRESSION_RATIO_THRESHOLD or says_again(words)


SQUEEZED_S = 0.04
"""A word aligned this short, at the end of a chunk, was written where no audio of it is: the alignment piles
the words Whisper wrote into the padding after the audio at the audio's end, 0.02 s each."""


def without_loop_after_audio(transcript: ChunkTranscript, chunk: np.ndarray) -> ChunkTranscript | None:
    """A short window's most common loop: Whisper writes the chunk's words, then writes them again into the
    silence that pads the window ("And so my fellow Americans. And so my fellow Americans. And so..."); the
    alignment piles those at the chunk's end. The transcript without that pile (None when there is none: a pile
    that does not begin with a word written before it is the chunk's last words, cut off). Words only: it
    applies to readings asked with word timestamps (live readings)."""
    words = transcript.words
    kept = len(words)
    while kept and words[kept - 1].end - words[kept - 1].start <= SQUEEZED_S:
        kept -= 1
    if kept in (0, len(words)) or len(transcript.segments) != 1:
        return None
    written = {_key(word.word) for word in words[:kept]}
    if _key(words[kept].word) not in written:
        return None
    (segment,) = transcript.segments
    text = "".join(word.word for word in words[:kept])
    kept_segment = segment.model_copy(update={"text": text, "end": words[kept - 1].end})
    return transcript.model_copy(update={"words": words[:kept], "segments": [kept_segment]})


def _key(word: str) -> str:
    return re.sub(r"^\W+|\W+$", "", word.strip().lower())


def says_again(words: list[str]) -> bool:
    for size in range(1, 5):
        for start in range(len(words) - size * LOOP_REPEATS + 1):
            phrase = words[start : start + size]
            if all(words[start + k * size : start + (k + 1) * size] == phrase for k in range(1, LOOP_REPEATS)):
                return True
    return False


LEVEL_FRAME = SAMPLE_RATE // 20
"""50 ms frames for `_misses_speech`'s sound level."""
MISSED_SPEECH_S = 0.8
"""Sound this long that a short-window transcript's words do not account for: read again in a longer window."""
LONGEST_WORD_S = 0.8
"""A word aligned longer than this stretches over speech Whisper did not write down (its excess counts)."""


def misses_speech(transcript: ChunkTranscript, chunk: np.ndarray) -> bool:
    """The short window's other failure: Whisper stops early or skips a stretch. Seen in the words' times (only
    when the chunk was read with word timestamps): sound before the first word or after the last (50 ms
    frames above a fifteenth of the chunk's loud level), and the sound under words the alignment stretched
    over more than LONGEST_WORD_S of it, add up to more than MISSED_SPEECH_S. (A word stretched over a pause,
    as a reading that starts with the words before a pause has, is not a miss.)"""
    words = transcript.words
    if not words:
        return False
    frames = len(chunk) // LEVEL_FRAME
    if frames == 0:
        return False
    level = np.sqrt(np.mean(np.square(chunk[: frames * LEVEL_FRAME].reshape(frames, LEVEL_FRAME)), axis=1))
    sounding = level > max(0.15 * float(np.percentile(level, 95)), 1e-3)
    middles = (np.arange(frames) + 0.5) * LEVEL_FRAME / SAMPLE_RATE
    outside = (middles < words[0].start - 0.5) | (middles > words[-1].end + 0.5)
    unwritten = float(np.sum(sounding & outside)) * LEVEL_FRAME / SAMPLE_RATE
    stretched = 0.0  # sound under one word beyond a long word's length; a word stretched over a pause is fine
    for word in words:
        if word.end - word.start > LONGEST_WORD_S:
            under = (middles >= word.start) & (middles < word.end)
            stretched += max(0.0, float(np.sum(sounding & under)) * LEVEL_FRAME / SAMPLE_RATE - LONGEST_WORD_S)
    return unwritten + stretched > MISSED_SPEECH_S
