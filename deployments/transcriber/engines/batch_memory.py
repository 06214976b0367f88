"""How many chunks one engine batch may hold so that its activations stay inside the replica's memory budget
(`whisper.max_batch_memory_mb`, issue 63).

A batch's peak memory over the loaded weights grows with its items and their encoder window, not with the
job: the encoder's hidden states and attention over the window's frames, the decoder's beams and their caches.
Measured with `scripts/bench_batch_memory.py` (2 cores, int8; docs: Performance, "A batch's memory"), the peak
per item is close to linear in frames times the model's width: CTranslate2 peaked at 20-41 values of 4 bytes per
encoder frame and unit of width (tiny.en and base, 10 s and 30 s windows; float16 on a GPU, 2 bytes), the
transformers engine at about five times as much. `VALUES_PER_FRAME_AND_WIDTH` is the envelope of those
measurements, so an estimate errs on the safe side.

The budget is the replica's: the engine runs up to `whisper.parallel_batches` batches at once, so each gets its
share. A batch the Transcriber formed larger than its share is run as consecutive sub-batches (on a CPU two items
per batch already reach the engine's throughput; more only costs memory). One item over the budget still runs:
a chunk is never refused, and the log says the budget is too small for the model.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from math import floor
from typing import TypeVar

from deployments.config import WhisperModelConfig

logger = logging.getLogger("ray.serve")

FRAMES_PER_SECOND = 50
"""Whisper's encoder output frames per second of window."""
VALUES_PER_FRAME_AND_WIDTH = {"ctranslate2": 40, "transformers": 200}
"""Peak activation values per item, per encoder frame and unit of the model's width (d_model), measured."""
DEFAULT_BUDGET_MB = {"cpu": 1024, "cuda": 4096}
"""A replica's budget when `whisper.max_batch_memory_mb` is not set, by device."""
WHISPER_WINDOW_S = 30.0

T = TypeVar("T")


def default_budget_mb(device: str) -> int:
    """The budget on this device (`cpu` or `cuda`: where the engine runs, `auto` resolved)."""
    return DEFAULT_BUDGET_MB["cpu" if device == "cpu" else "cuda"]


def value_bytes(compute_type: str) -> int:
    """Bytes of one activation value: CTranslate2's int8 weights compute in float32, float16 types in 2 bytes."""
    return 2 if "float16" in compute_type else 4


@dataclass(frozen=True)
class BatchMemory:
    """One engine's batches under a replica's budget."""

    engine: str
    width: int
    """The model's d_model: 384 for tiny, 512 for base, 1280 for large."""
    value_bytes: int
    budget_mb: float
    concurrent_batches: int

    @classmethod
    def for_replica(
        cls, engine: str, width: int, value_bytes: int, config: WhisperModelConfig, device: str
    ) -> "BatchMemory":
        """The budget `config` sets (else the default of `device`, where the engine runs: `auto` resolved), shared
        by its `parallel_batches`; logged once."""
        budget = config.max_batch_memory_mb or default_budget_mb(device)
        memory = cls(engine, width, value_bytes, budget, config.parallel_batches)
        memory.log()
        return memory

    @property
    def share_mb(self) -> float:
        """What one of the batches running at once may take."""
        return self.budget_mb / self.concurrent_batches

    def item_mb(self, window_s: float = WHISPER_WINDOW_S) -> float:
        """The estimated peak memory of one item read in a `window_s` window."""
        frames = window_s * FRAMES_PER_SECOND
        return frames * self.width * VALUES_PER_FRAME_AND_WIDTH[self.engine] * self.value_bytes / 2**20

    def most_items(self, window_s: float = WHISPER_WINDOW_S) -> int:
        """The most items a batch read in `window_s` may hold: its share of the budget, at least one."""
        return max(1, floor(self.share_mb / self.item_mb(window_s)))

    def batches(self, items: Sequence[T], window_s: float = WHISPER_WINDOW_S) -> list[list[T]]:
        """`items` in order, cut into batches that fit."""
        most = self.most_items(window_s)
        return [list(items[start : start + most]) for start in range(0, len(items), most)]

    def log(self) -> None:
        """Say what the budget allows, once, when the engine loads."""
        if self.item_mb() > self.share_mb:
            logger.warning(
                "whisper.max_batch_memory_mb %.0f leaves %.0f MB per batch, less than one 30 s chunk of this model"
                " needs (about %.0f MB): chunks are read one at a time and may take more",
                self.budget_mb,
                self.share_mb,
                self.item_mb(),
            )
        logger.info(
            "Transcriber batches: at most %d chunks read in 30 s (%.0f MB each), %d in 10 s, within %.0f MB per"
            " batch (%d at once, whisper.max_batch_memory_mb %.0f)",
            self.most_items(),
            self.item_mb(),
            self.most_items(10.0),
            self.share_mb,
            self.concurrent_batches,
            self.budget_mb,
        )
