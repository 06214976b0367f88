"""Cut audio into Whisper-sized chunks (at most 30 s) at silences, with Silero VAD.

Chunks are the unit of work: a long file becomes a batch of chunks, and chunks of many requests share
batches. Each chunk is a contiguous range of the original audio, so a time inside it maps back by adding
the chunk's start; the silence between chunks is simply not transcribed.
"""

import numpy as np
import torch
from silero_vad import get_speech_timestamps, load_silero_vad

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
    """Silero VAD (ONNX, from the `silero-vad` package: no download) and the chunking around it."""

    def __init__(self, use_vad: bool = True, max_chunk_s: float = MAX_CHUNK_S) -> None:
        self.model = load_silero_vad(onnx=True) if use_vad else None
        self.max_samples = int(max_chunk_s * SAMPLE_RATE)

    def chunks(self, samples: np.ndarray) -> list[tuple[int, int]]:
        if self.model is None:
            return fixed_windows(len(samples), self.max_samples)
        speech = get_speech_timestamps(
            torch.from_numpy(samples),
            self.model,
            sampling_rate=SAMPLE_RATE,
            max_speech_duration_s=self.max_samples / SAMPLE_RATE - 1,  # Silero splits long speech at its pauses
            speech_pad_ms=200,
        )
        return merge_speech([(int(region["start"]), int(region["end"])) for region in speech], self.max_samples)
