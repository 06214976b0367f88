"""The short encoder window (`ChunkOptions.encoder_window="audio"`): Whisper's encoder reads only as much audio as
the chunks hold (at least `short_window_min_s`), not 30 s. On real speech clips of 2 to 15 s it gives nearly the
words the full window gives (a measured difference, bounded here), it never repeats a phrase more than the full
window does, and a transcript that loops is read again in a longer window, then the full one."""

import re
from collections import Counter

import jiwer
import numpy as np
import pytest

from deployments.transcriber.engines import short_window
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Segment, Word

CLIPS_S = [(6, 8), (6, 10), (10, 14), (14, 20), (6, 15), (15, 27), (0, 11), (16, 30), (3, 18)]
"""Stretches of pyannote's call from 2 to 15 s, cut anywhere (mid-word too), as live buffers are."""
LIVE = ChunkOptions(language="en", word_timestamps=True, segment_timestamps=False, beam_size=1)


def _words(transcript: ChunkTranscript) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", "".join(s.text for s in transcript.segments).lower()).split()


def _most_repeated_trigram(words: list[str]) -> int:
    return max(Counter(zip(words, words[1:], words[2:], strict=False)).values(), default=0)


def test_short_window_reads_nearly_the_words_of_the_full_window(
    tiny: CTranslate2Engine, call_samples: np.ndarray
) -> None:
    clips = [call_samples[start * SAMPLE_RATE : end * SAMPLE_RATE] for start, end in CLIPS_S]
    full = [tiny.transcribe_batch([clip], LIVE)[0] for clip in clips]
    short_options = LIVE.model_copy(update={"encoder_window": "audio"})
    short = [tiny.transcribe_batch([clip], short_options)[0] for clip in clips]
    difference = jiwer.wer([" ".join(_words(t)) for t in full], [" ".join(_words(t)) for t in short])
    assert difference <= 0.15  # tiny.en, 10 s shortest window: 0.05 here (0.16 before the missed-speech guard)
    for full_transcript, short_transcript in zip(full, short, strict=True):
        # no loop: a trigram may come once more than in the full window's reading (int8 kernels differ by CPU:
        # "hello hello hello" said three times reads as four on one), a loop repeats it many times
        assert _most_repeated_trigram(_words(short_transcript)) <= _most_repeated_trigram(_words(full_transcript)) + 1
        assert all(word.end > word.start for word in short_transcript.words)


def test_a_batch_of_chunks_of_several_lengths_gets_one_transcript_each(
    tiny: CTranslate2Engine, call_samples: np.ndarray
) -> None:
    clips = [call_samples[6 * SAMPLE_RATE : 10 * SAMPLE_RATE], call_samples[14 * SAMPLE_RATE : 26 * SAMPLE_RATE]]
    transcripts = tiny.transcribe_batch(clips, LIVE.model_copy(update={"encoder_window": "audio"}))
    assert "know you were there" in " ".join(_words(transcripts[0]))
    assert "chicago" in _words(transcripts[1])
    for clip, transcript in zip(clips, transcripts, strict=True):
        assert all(0 <= word.start < word.end <= len(clip) / SAMPLE_RATE for word in transcript.words)


def _looping(text: str) -> ChunkTranscript:
    segment = Segment(id=0, seek=0, start=0.0, end=1.0, text=text, tokens=[], temperature=0.0, avg_logprob=-0.1,
                      compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip
    return ChunkTranscript(language="en", segments=[segment])


@pytest.mark.parametrize(
    ("loops_until", "windows_read"),
    [
        (500, [500, 1000]),  # the batch in 5 s (4 s and 1 s of silence), then the looping chunk alone in 10 s
        (1000, [500, 1000, None]),  # looping in 10 s too: then in Whisper's own 30 s
    ],
)
def test_a_short_window_transcript_that_loops_is_read_again_in_a_longer_window(
    tiny: CTranslate2Engine, monkeypatch: pytest.MonkeyPatch, loops_until: int, windows_read: list[int | None]
) -> None:
    windows: list[int | None] = []

    def fake_transcribe(chunks, options, frames, max_tokens=None):
        windows.append(frames)
        loops = frames is not None and frames <= loops_until
        loop = "Hello. " * 40 if loops else "Hello, I didn't know you were there."
        return [_looping(loop), _looping("Fine, thanks.")][: len(chunks)]

    monkeypatch.setattr(tiny, "_transcribe", fake_transcribe)
    chunks = [np.zeros(4 * SAMPLE_RATE, np.float32), np.zeros(int(3.5 * SAMPLE_RATE), np.float32)]
    transcripts = tiny.transcribe_batch(chunks, LIVE.model_copy(update={"encoder_window": "audio"}))
    assert windows == windows_read
    assert [t.segments[0].text for t in transcripts] == ["Hello, I didn't know you were there.", "Fine, thanks."]


def _timed_words(words: list[tuple[str, float, float]]) -> ChunkTranscript:
    text = "".join(word for word, _, _ in words)
    segment = Segment(id=0, seek=0, start=0.0, end=words[-1][2], text=text, tokens=[], temperature=0.0,
                      avg_logprob=-0.1, compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip
    return ChunkTranscript(language="en", segments=[segment], words=[Word(word=w, start=s, end=e) for w, s, e in words])


def test_words_written_again_into_the_padding_are_dropped_without_a_reading_in_30_s() -> None:
    """Whisper reading jfk's first 2.4 s in a short window wrote "And so my fellow Americans." and then wrote it
    again and again into the silence after the audio; the alignment piles those at the end, 0.02 s each."""
    said = [(" And", 0.0, 0.76), (" so", 0.76, 1.02), (" my", 1.02, 1.4), (" fellow", 1.4, 1.76)]
    said += [(" Americans.", 1.76, 2.02)]
    piled = [(w, 2.02 + 0.02 * n, 2.04 + 0.02 * n) for n, (w, _, _) in enumerate(said * 3)][:18]
    speech = np.full(int(2.4 * SAMPLE_RATE), 0.1, np.float32)
    looping = _timed_words(said + piled)
    assert short_window.repeats_itself(looping, len(speech))
    trimmed = short_window.without_loop_after_audio(looping, speech)
    assert trimmed is not None and trimmed.segments[0].text == " And so my fellow Americans."
    assert [w.word for w in trimmed.words] == [w for w, _, _ in said]
    in_the_audio = _timed_words([(w, 0.12 * n, 0.12 * n + 0.1) for n, (w, _, _) in enumerate(said * 4)])
    assert short_window.without_loop_after_audio(in_the_audio, speech) is None  # a loop inside the audio: 30 s
    assert short_window.without_loop_after_audio(_timed_words(said), speech) is None  # nothing piled: no change


@pytest.mark.parametrize(
    ("text", "seconds", "loops"),
    [
        ("Hello? Hello? Oh, hello. I didn't know you were there.", 4, False),
        ("Hello. " * 12, 4, True),  # compresses far more than 2.4 times
        ("Hello? Hello? Hello? Hello, I didn't know you were there.", 4, True),  # one word four times in a row
        ("I don't know. I don't know. I don't know. I don't know.", 6, True),
        ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen", 2, True),  # 7 words/s
    ],
)
def test_what_counts_as_a_loop(text: str, seconds: int, loops: bool) -> None:
    assert short_window.repeats_itself(_looping(text), seconds * SAMPLE_RATE) is loops


def _timed(words: list[tuple[str, float, float]]) -> ChunkTranscript:
    transcript = _looping(" ".join(text for text, _, _ in words))
    return transcript.model_copy(update={"words": [Word(word=f" {t}", start=s, end=e, prob=0.9) for t, s, e in words]})


def _speech_until(seconds: float, total: float = 4.0) -> np.ndarray:
    """A tone standing in for speech (its level is what counts) from 0 s until `seconds`, then silence."""
    times = np.arange(int(total * SAMPLE_RATE)) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * 220 * times) * (times < seconds)).astype(np.float32)


@pytest.mark.parametrize(
    ("words", "speech_until", "misses"),
    [
        ([("I", 0.1, 0.3), ("heard", 0.3, 0.9), ("a", 1.0, 1.1), ("beep.", 1.1, 3.8)], 4.0, True),  # stretched
        ([("I", 0.1, 0.3), ("heard", 0.3, 0.7)], 4.0, True),  # stopped early: 2.8 s of sound after the last word
        ([("I", 0.1, 0.3), ("heard", 0.3, 0.7)], 1.0, False),  # silence after the last word is nothing missed
        ([("Hello?", 2.0, 2.6), ("Hello?", 2.8, 3.5)], 4.0, True),  # 1.5 s of sound before the first word
        ([("one", 0.1, 0.7), ("two", 1.0, 1.6), ("three", 2.0, 2.7), ("four", 3.0, 3.8)], 4.0, False),
    ],
)
def test_a_short_window_transcript_that_leaves_sound_unwritten_is_caught(
    words: list[tuple[str, float, float]], speech_until: float, misses: bool
) -> None:
    assert short_window.misses_speech(_timed(words), _speech_until(speech_until)) is misses
    assert short_window.misses_speech(_timed([]), _speech_until(speech_until)) is False  # silence, or text only


def test_chunks_of_different_lengths_are_read_in_windows_of_their_own_length(
    tiny: CTranslate2Engine, call_samples: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bucketed by window: two 4 s readings share a 5 s window, a 14 s one is read in 15 s, and neither pays
    for the other's length (on a GPU, readings of similar length still batch together)."""
    windows: list[tuple[int, int | None]] = []
    transcribe = tiny._transcribe

    def spy(chunks: list[np.ndarray], options: ChunkOptions, frames: int | None, *rest: int) -> list[ChunkTranscript]:
        windows.append((len(chunks), frames))
        return transcribe(chunks, options, frames, *rest)

    monkeypatch.setattr(tiny, "_transcribe", spy)
    clips = [call_samples[6 * SAMPLE_RATE : 10 * SAMPLE_RATE], call_samples[12 * SAMPLE_RATE : 26 * SAMPLE_RATE]]
    transcripts = tiny.transcribe_batch(
        [clips[0], clips[1], clips[0]], LIVE.model_copy(update={"encoder_window": "audio"})
    )
    assert (2, 500) in windows and (1, 1500) in windows  # 100 feature frames a second (and a guard's reread)
    assert _words(transcripts[0]) == _words(transcripts[2]) and "chicago" in _words(transcripts[1])
