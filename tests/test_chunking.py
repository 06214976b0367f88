"""Chunking at silences (Silero VAD) and joining chunk transcripts back onto one timeline."""

import itertools

import numpy as np

from deployments.files._assembly import join_chunks
from deployments.files._chunking import (
    Pieces,
    SpeechChunker,
    StreamingChunker,
    chunk_audio,
    file_time,
    fixed_windows,
    merge_speech,
    speech_samples,
)
from deployments.files.decoding import decode_audio
from deployments.types import SAMPLE_RATE, ChunkTranscript, Segment, Word
from devkit.media import pyannote_sample

SECOND = SAMPLE_RATE


def test_speech_ranges_are_packed_up_to_the_limit_and_long_ones_split() -> None:
    speech = [(0, 10 * SECOND), (12 * SECOND, 25 * SECOND), (27 * SECOND, 31 * SECOND), (41 * SECOND, 110 * SECOND)]
    chunks = merge_speech(speech, max_samples=30 * SECOND, max_span_samples=60 * SECOND)
    assert chunks[0] == ((0, 10 * SECOND), (12 * SECOND, 25 * SECOND), (27 * SECOND, 31 * SECOND))  # 27 s of speech
    assert all(speech_samples(chunk) <= 30 * SECOND for chunk in chunks)
    pieces = [piece for chunk in chunks for piece in chunk]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(pieces))
    assert sum(end - start for start, end in pieces) == sum(end - start for start, end in speech)  # all, once


def test_a_chunk_stretches_over_at_most_the_span_limit() -> None:
    speech = [(0, 2 * SECOND), (50 * SECOND, 52 * SECOND), (70 * SECOND, 72 * SECOND)]
    chunks = merge_speech(speech, max_samples=30 * SECOND, max_span_samples=60 * SECOND)
    assert chunks == [((0, 2 * SECOND), (50 * SECOND, 52 * SECOND)), ((70 * SECOND, 72 * SECOND),)]


def test_fixed_windows_cover_everything() -> None:
    assert fixed_windows(65 * SECOND, 30 * SECOND) == [
        ((0, 30 * SECOND),),
        ((30 * SECOND, 60 * SECOND),),
        ((60 * SECOND, 65 * SECOND),),
    ]


def test_real_speech_is_cut_at_silences_and_silence_gives_no_chunks() -> None:
    samples = decode_audio(pyannote_sample()).samples
    long_audio = np.concatenate([samples, np.zeros(5 * SECOND, np.float32), samples, samples])
    chunker = SpeechChunker()
    chunks = chunker.chunks(long_audio)
    assert len(chunks) >= 3 and all(speech_samples(chunk) <= 30 * SECOND for chunk in chunks)
    assert all(chunk[-1][1] - chunk[0][0] <= 60 * SECOND for chunk in chunks)
    assert chunks[0][0][0] > 2 * SECOND  # the sample's silent first seconds are skipped
    assert sum(speech_samples(chunk) for chunk in chunks) < 0.9 * len(long_audio)  # silences are cut out
    assert chunker.chunks(np.zeros(10 * SECOND, np.float32)) == []


def _segment(start: float, end: float, text: str) -> Segment:
    return Segment(id=0, seek=0, start=start, end=end, text=text, tokens=[], temperature=0.0, avg_logprob=0.0,
                   compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip


def test_a_time_in_a_chunk_maps_through_its_pieces() -> None:
    pieces = ((2 * SECOND, 5 * SECOND), (10 * SECOND, 12 * SECOND))  # 3 s, then 2 s of speech
    assert file_time(1.0, pieces) == 3.0
    assert file_time(3.0, pieces) == 10.0 and file_time(3.0, pieces, is_end=True) == 5.0  # the seam
    assert file_time(4.5, pieces) == 11.5
    assert file_time(9.0, pieces, is_end=True) == 12.0 and file_time(-1.0, pieces) == 2.0  # clamped


def test_join_maps_times_onto_the_file_and_renumbers() -> None:
    spans: list[Pieces] = [((2 * SECOND, 30 * SECOND),), ((40 * SECOND, 65 * SECOND),)]
    first = ChunkTranscript(language="en", segments=[_segment(0.5, 3.0, " One."), _segment(3.0, 5.0, " Two.")],
                            words=[Word(word=" One.", start=0.5, end=1.0, prob=0.9)])  # fmt: skip
    second = ChunkTranscript(
        language="en",
        segments=[_segment(1.0, 26.0, " Three.")],
        words=[Word(word=" Three.", start=1.0, end=2.0, prob=0.9)],
    )
    joined = join_chunks([first, second], spans, 70.0, "en")
    assert [(s.id, s.start, s.end) for s in joined.segments] == [
        (0, 2.5, 5.0),
        (1, 5.0, 7.0),
        (2, 41.0, 65.0),
    ]  # clamped to the chunk's end
    assert [(w.start, w.end) for w in joined.words] == [(2.5, 3.0), (41.0, 42.0)]
    assert joined.text == "One. Two. Three." and joined.duration == 70.0


def _covered(spans: list[tuple[int, int]], length: int) -> np.ndarray:
    mask = np.zeros(length, bool)
    for start, end in spans:
        mask[start:end] = True
    return mask


def test_streaming_chunks_cover_the_same_speech_as_whole_file_chunks() -> None:
    """Real speech with silences, fed in 7 s windows so that window edges fall inside speech."""
    speech = decode_audio(pyannote_sample()).samples
    audio = np.concatenate(
        [speech, np.zeros(40 * SECOND, np.float32), speech, np.zeros(5 * SECOND, np.float32), speech]
    )
    chunker = SpeechChunker()
    whole = chunker.chunks(audio)
    streaming = StreamingChunker(chunker)
    chunks = []
    for start in range(0, len(audio), 7 * SECOND):
        chunks += list(streaming.feed(audio[start : start + 7 * SECOND]))
    chunks += list(streaming.finish())
    spans = [piece for chunk in chunks for piece in chunk.pieces]
    assert all(np.array_equal(chunk.samples, chunk_audio(audio, chunk.pieces)) for chunk in chunks)
    assert all(speech_samples(chunk.pieces) <= 30 * SECOND for chunk in chunks)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))  # no overlap
    expected = _covered([piece for pieces in whole for piece in pieces], len(audio))
    got = _covered(spans, len(audio))
    assert (expected & got).sum() >= 0.97 * expected.sum()  # the same speech, give or take the window edges
    assert got.sum() <= 1.05 * expected.sum()
    assert len(streaming.buffer) == 0


def test_streaming_memory_stays_bounded_on_long_silence() -> None:
    streaming = StreamingChunker(SpeechChunker())
    for _ in range(10):  # ten minutes of silence, a minute at a time
        assert list(streaming.feed(np.zeros(60 * SECOND, np.float32))) == []
        assert len(streaming.buffer) <= 1 * SECOND
