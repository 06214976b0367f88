"""Cut audio into Whisper-sized chunks (at most 30 s of speech) with Silero VAD.

Chunks are the unit of work: a long file becomes a batch of chunks, and chunks of many requests share
batches. A chunk is the speech of a stretch of the file with the silences between its speech cut out, as
faster-whisper's `BatchedInferencePipeline` does: the encoder then sees 30 s of speech in each chunk instead
of speech and silence, so a file needs fewer chunks. Each chunk keeps its `Pieces` (where its speech lies
in the file), so a time inside it maps back onto the file (`file_time`); the silence is not transcribed.

`StreamingChunker` does this on audio that arrives a window at a time, holding at most one window plus
the unfinished last chunk's stretch (under `max_span_s`), so memory does not grow with the file.
"""

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps

from deployments.types import SAMPLE_RATE, SpeechDetection

MAX_CHUNK_S = 30.0
MAX_SPAN_S = 60.0

Pieces = tuple[tuple[int, int], ...]
"""A chunk's speech: (start, end) sample ranges in the file, in order, not overlapping."""


def speech_samples(pieces: Sequence[tuple[int, int]]) -> int:
    return sum(end - start for start, end in pieces)


def merge_speech(speech: list[tuple[int, int]], max_samples: int, max_span_samples: int) -> list[Pieces]:
    """Pack consecutive speech ranges into chunks of at most `max_samples` of speech that stretch over at
    most `max_span_samples` of the file; split longer ranges."""
    chunks: list[list[tuple[int, int]]] = []
    for start, end in speech:
        while end - start > max_samples:  # one unbroken stretch of speech longer than a chunk
            chunks.append([(start, start + max_samples)])
            start += max_samples
        last = chunks[-1] if chunks else None
        if last and speech_samples(last) + end - start <= max_samples and end - last[0][0] <= max_span_samples:
            if last[-1][1] >= start:  # touching ranges are one piece
                last[-1] = (last[-1][0], end)
            else:
                last.append((start, end))
        else:
            chunks.append([(start, end)])
    return [tuple(chunk) for chunk in chunks]


def fixed_windows(num_samples: int, max_samples: int) -> list[Pieces]:
    """Chunks without VAD: back-to-back windows of `max_samples`."""
    return [((start, min(start + max_samples, num_samples)),) for start in range(0, num_samples, max_samples)]


def chunk_audio(samples: np.ndarray, pieces: Pieces) -> np.ndarray:
    """A chunk's audio: its pieces of `samples`, back to back."""
    if len(pieces) == 1:
        ((start, end),) = pieces
        return samples[start:end]
    return np.concatenate([samples[start:end] for start, end in pieces])


def file_time(seconds: float, pieces: Pieces, is_end: bool = False) -> float:
    """A time in a chunk's audio as seconds in the file, clamped to the chunk. On the seam between two
    pieces, an end time is the earlier piece's end and a start time the later piece's start."""
    position = min(max(seconds * SAMPLE_RATE, 0.0), float(speech_samples(pieces)))
    for start, end in pieces:
        if position < end - start or (is_end and position <= end - start):
            return (start + position) / SAMPLE_RATE
        position -= end - start
    return pieces[-1][1] / SAMPLE_RATE


class SpeechChunker:
    """Silero VAD and the chunking around it.

    The Silero model and its ONNX runner are the ones faster-whisper ships (no download): it scores the
    audio's 512-sample windows in large batches, about 3x faster than the `silero-vad` package's
    window-by-window loop, with the same model and the same thresholds.
    """

    def __init__(self, use_vad: bool = True, max_chunk_s: float = MAX_CHUNK_S, max_span_s: float = MAX_SPAN_S) -> None:
        self.max_samples = int(max_chunk_s * SAMPLE_RATE)
        self.max_span_samples = int(max(max_span_s, max_chunk_s) * SAMPLE_RATE)
        self.vad_options = (
            VadOptions(
                threshold=0.5,
                min_speech_duration_ms=250,
                max_speech_duration_s=max_chunk_s - 1,  # Silero splits longer speech at its pauses
                min_silence_duration_ms=100,
                speech_pad_ms=200,
            )
            if use_vad
            else None
        )

    def detecting(self, detection: SpeechDetection) -> "SpeechChunker":
        """This chunker with a client's VAD settings (OpenAI's chunking_strategy server_vad): VAD on, with its
        threshold, its padding around speech, and the pause that ends speech."""
        chunker = SpeechChunker(True, self.max_samples / SAMPLE_RATE, self.max_span_samples / SAMPLE_RATE)
        vad_options: VadOptions = chunker.vad_options  # VAD is on
        chunker.vad_options = dataclasses.replace(
            vad_options,
            threshold=detection.threshold,
            speech_pad_ms=detection.prefix_padding_ms,
            min_silence_duration_ms=detection.silence_duration_ms,
        )
        return chunker

    def chunks(self, samples: np.ndarray) -> list[Pieces]:
        if self.vad_options is None:
            return fixed_windows(len(samples), self.max_samples)
        return merge_speech(self.speech(samples), self.max_samples, self.max_span_samples)

    def speech(self, samples: np.ndarray) -> list[tuple[int, int]]:
        """(start, end) sample ranges of the speech Silero VAD finds, padded; with VAD off, all of it."""
        if self.vad_options is None:
            return [(0, len(samples))] if len(samples) else []
        speech = get_speech_timestamps(samples, self.vad_options, sampling_rate=SAMPLE_RATE)
        return [(int(region["start"]), int(region["end"])) for region in speech]


@dataclass(frozen=True)
class Chunk:
    """A chunk's audio (its pieces back to back) and where its pieces lie in the file, in samples."""

    pieces: Pieces
    samples: np.ndarray

    @property
    def start(self) -> int:
        return self.pieces[0][0]

    @property
    def end(self) -> int:
        return self.pieces[-1][1]


class StreamingChunker:
    """Chunks of audio that is fed a window at a time, the same as `SpeechChunker` on the whole file
    except near window edges (where the VAD sees the same audio with a different start).

    After each window, every chunk but the last is final: a later chunk can only start after it. The last
    one is final once more than `max_span_s` of audio follows its start, since `merge_speech` never
    stretches a chunk past that. Otherwise its audio is carried into the next window and cut again there.
    """

    TAIL_S = 1.0
    """Audio kept after the last final chunk, so that speech starting right at a window's edge is found."""

    def __init__(self, chunker: SpeechChunker) -> None:
        self.chunker = chunker
        self.buffer = np.zeros(0, dtype=np.float32)
        self.buffer_start = 0  # the buffer's first sample, counted from the start of the file
        self.emitted_until = 0  # no chunk may take a sample before this one again

    def feed(self, window: np.ndarray) -> Iterator[Chunk]:
        self.buffer = np.concatenate([self.buffer, window]) if len(self.buffer) else window
        chunks = [pieces for pieces in self.chunker.chunks(self.buffer) if self._new(pieces)]
        keep_from = max(0, len(self.buffer) - int(self.TAIL_S * SAMPLE_RATE))
        for index, pieces in enumerate(chunks):
            last = index == len(chunks) - 1
            if last and len(self.buffer) - pieces[0][0] <= self.chunker.max_span_samples:
                keep_from = pieces[0][0]  # may still grow: cut it again with the next window
                break
            yield self._emit(pieces)
            keep_from = max(keep_from, pieces[-1][1])
        self._drop_before(keep_from)

    def finish(self) -> Iterator[Chunk]:
        """The chunks left when the audio ends."""
        for pieces in self.chunker.chunks(self.buffer):
            if self._new(pieces):
                yield self._emit(pieces)
        self._drop_before(len(self.buffer))

    def _new(self, pieces: Pieces) -> bool:
        return self.buffer_start + pieces[-1][1] > self.emitted_until

    def _emit(self, pieces: Pieces) -> Chunk:
        floor = self.emitted_until - self.buffer_start  # never the same sample twice
        pieces = tuple((max(start, floor), end) for start, end in pieces if end > floor)
        self.emitted_until = self.buffer_start + pieces[-1][1]
        in_file = tuple((self.buffer_start + start, self.buffer_start + end) for start, end in pieces)
        return Chunk(in_file, chunk_audio(self.buffer, pieces).copy())

    def _drop_before(self, index: int) -> None:
        self.buffer = self.buffer[index:].copy()
        self.buffer_start += index
