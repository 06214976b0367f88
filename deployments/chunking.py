"""Cut audio into Whisper-sized chunks (at most 30 s) at silences, with Silero VAD.

Chunks are the unit of work: a long file becomes a batch of chunks, and chunks of many requests share
batches. Each chunk is a contiguous range of the original audio, so a time inside it maps back by adding
the chunk's start; the silence between chunks is simply not transcribed.

`StreamingChunker` does this on audio that arrives a window at a time, holding at most one window plus
the unfinished last chunk (under 30 s), so memory does not grow with the file.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps

from deployments.types import SAMPLE_RATE

MAX_CHUNK_S = 30.0


def merge_speech(speech: list[tuple[int, int]], max_samples: int) -> list[tuple[int, int]]:
    """Join consecutive speech ranges into chunks no longer than `max_samples`; split longer ranges."""
    chunks: list[tuple[int, int]] = []
    for start, end in speech:
        while end - start > max_samples:  # one unbroken stretch of speech longer than a chunk
            chunks.append((start, start + max_samples))
            start += max_samples
        if chunks and end - chunks[-1][0] <= max_samples:
            chunks[-1] = (chunks[-1][0], end)
        else:
            chunks.append((start, end))
    return chunks


def fixed_windows(num_samples: int, max_samples: int) -> list[tuple[int, int]]:
    """Chunks without VAD: back-to-back windows of `max_samples`."""
    return [(start, min(start + max_samples, num_samples)) for start in range(0, num_samples, max_samples)]


class SpeechChunker:
    """Silero VAD and the chunking around it.

    The Silero model and its ONNX runner are the ones faster-whisper ships (no download): it scores the
    audio's 512-sample windows in large batches, about 3x faster than the `silero-vad` package's
    window-by-window loop, with the same model and the same thresholds.
    """

    def __init__(self, use_vad: bool = True, max_chunk_s: float = MAX_CHUNK_S) -> None:
        self.max_samples = int(max_chunk_s * SAMPLE_RATE)
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

    def chunks(self, samples: np.ndarray) -> list[tuple[int, int]]:
        if self.vad_options is None:
            return fixed_windows(len(samples), self.max_samples)
        speech = get_speech_timestamps(samples, self.vad_options, sampling_rate=SAMPLE_RATE)
        return merge_speech([(int(region["start"]), int(region["end"])) for region in speech], self.max_samples)


@dataclass(frozen=True)
class Chunk:
    """A chunk's samples and where they start in the file, in samples."""

    start: int
    samples: np.ndarray

    @property
    def end(self) -> int:
        return self.start + len(self.samples)


class StreamingChunker:
    """Chunks of audio that is fed a window at a time, the same as `SpeechChunker` on the whole file
    except near window edges (where the VAD sees the same audio with a different start).

    After each window, every chunk but the last is final: a later chunk can only start after it. The last
    one is final once more than `max_chunk_s` of audio follows its start, since `merge_speech` never grows
    a chunk past that. Otherwise its audio is carried into the next window and cut again there.
    """

    TAIL_S = 1.0
    """Audio kept after the last final chunk, so that speech starting right at a window's edge is found."""

    def __init__(self, chunker: SpeechChunker) -> None:
        self.chunker = chunker
        self.buffer = np.zeros(0, dtype=np.float32)
        self.buffer_start = 0  # the buffer's first sample, counted from the start of the file
        self.emitted_until = 0  # no chunk may start before this sample again

    def feed(self, window: np.ndarray) -> Iterator[Chunk]:
        self.buffer = np.concatenate([self.buffer, window]) if len(self.buffer) else window
        ranges = [
            (start, end)
            for start, end in self.chunker.chunks(self.buffer)
            if self.buffer_start + end > self.emitted_until
        ]
        keep_from = max(0, len(self.buffer) - int(self.TAIL_S * SAMPLE_RATE))
        for index, (start, end) in enumerate(ranges):
            last = index == len(ranges) - 1
            if last and len(self.buffer) - start <= self.chunker.max_samples:
                keep_from = start  # may still grow: cut it again with the next window
                break
            yield self._emit(start, end)
            keep_from = max(keep_from, end)
        self._drop_before(keep_from)

    def finish(self) -> Iterator[Chunk]:
        """The chunks left when the audio ends."""
        for start, end in self.chunker.chunks(self.buffer):
            if self.buffer_start + end > self.emitted_until:
                yield self._emit(start, end)
        self._drop_before(len(self.buffer))

    def _emit(self, start: int, end: int) -> Chunk:
        start = max(start, self.emitted_until - self.buffer_start)  # never the same sample twice
        self.emitted_until = self.buffer_start + end
        return Chunk(self.buffer_start + start, self.buffer[start:end].copy())

    def _drop_before(self, index: int) -> None:
        self.buffer = self.buffer[index:].copy()
        self.buffer_start += index
