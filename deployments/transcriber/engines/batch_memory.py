"""How many chunks one engine batch may hold so that its activations stay inside the replica's memory budget
(`whisper.max_batch_memory_mb`, issue 63).

A batch's peak memory over the loaded weights grows with its items and their encoder window, not with the
job. It has two phases, one after the other: the encoder's hidden states and attention over the window's frames,
then the decoder's beams and their caches of the encoder output. Measured with `scripts/bench_batch_memory.py` (2
cores, int8; docs: Performance, "A batch's memory"), each is close to linear in frames times the model's width
per item the phase holds: `ENCODER_VALUES` and `DECODER_VALUES` (4 bytes each on a CPU, 2 in float16) are the
envelope of those measurements, so an estimate errs on the safe side. CTranslate2 on a CPU encodes one item at a
time (`whisper.encoder_batch_size`), so a batch's encoder phase is one item's whatever the batch; the transformers
engine encodes its whole batch and is counted as one phase.

The budget is the replica's: the engine runs up to `whisper.parallel_batches` batches at once, so each gets its
share. A batch the Transcriber formed larger than its share is run as consecutive sub-batches (on a CPU two items
per batch already reach the engine's throughput; more only costs memory). One item over the budget still runs:
a chunk is never refused, and the log says the budget is too small for the model.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from deployments.config import WhisperModelConfig

logger = logging.getLogger("ray.serve")

FRAMES_PER_SECOND = 50
"""Whisper's encoder output frames per second of window."""
ENCODER_VALUES = {"ctranslate2": 40, "transformers": 200}
"""The encoder's peak activation values per item it reads at once, per frame and unit of width (d_model), measured."""
DECODER_VALUES = {"ctranslate2": 24, "transformers": 200}
"""The decoder's (beam 5) per item of the batch, per frame and unit of width, measured."""
MOST_ITEMS = 64
"""Beyond any batch the Transcriber forms."""
DEFAULT_BUDGET_MB = {"cpu": 768, "cuda": 4096}
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
    encoder_items: int | None = None
    """Items the encoder reads at once (None: the whole batch)."""

    @classmethod
    def for_replica(
        cls, engine: str, width: int, value_bytes: int, config: WhisperModelConfig, device: str
    ) -> "BatchMemory":
        """The budget `config` sets (else the default of `device`, where the engine runs: `auto` resolved), shared
        by its `parallel_batches`, and the encoder's items at once (CTranslate2 on a CPU only: one unless `config`
        says otherwise); logged once."""
        budget = config.max_batch_memory_mb or default_budget_mb(device)
        encoder_items = None  # a GPU's encoder reads its whole batch (its output stays on the device)
        if engine == "ctranslate2" and device == "cpu":
            encoder_items = config.encoder_batch_size or 1
        memory = cls(engine, width, value_bytes, budget, config.parallel_batches, encoder_items)
        memory.log()
        return memory

    @property
    def share_mb(self) -> float:
        """What one of the batches running at once may take."""
        return self.budget_mb / self.concurrent_batches

    def _values_mb(self, values: int, window_s: float) -> float:
        return window_s * FRAMES_PER_SECOND * self.width * values * self.value_bytes / 2**20

    def batch_mb(self, items: int, window_s: float = WHISPER_WINDOW_S) -> float:
        """The estimated peak memory of a batch of `items` read in a `window_s` window: its larger phase."""
        encoded_at_once = min(items, self.encoder_items or items)
        encoder = encoded_at_once * self._values_mb(ENCODER_VALUES[self.engine], window_s)
        return max(encoder, items * self._values_mb(DECODER_VALUES[self.engine], window_s))

    def most_items(self, window_s: float = WHISPER_WINDOW_S) -> int:
        """The most items a batch read in `window_s` may hold: its share of the budget, at least one."""
        fitting = [n for n in range(1, MOST_ITEMS + 1) if self.batch_mb(n, window_s) <= self.share_mb]
        return max(fitting, default=1)

    def batches(self, items: Sequence[T], window_s: float = WHISPER_WINDOW_S) -> list[list[T]]:
        """`items` in order, cut into batches that fit."""
        most = self.most_items(window_s)
        return [list(items[start : start + most]) for start in range(0, len(items), most)]

    def log(self) -> None:
        """Say what the budget allows, once, when the engine loads."""
        if self.batch_mb(1) > self.share_mb:
            logger.warning(
                "whisper.max_batch_memory_mb %.0f leaves %.0f MB per batch, less than one 30 s chunk of this model"
                " needs (about %.0f MB): chunks are read one at a time and may take more",
                self.budget_mb,
                self.share_mb,
                self.batch_mb(1),
            )
        logger.info(
            "Transcriber batches: at most %d chunks read in 30 s (%.0f MB such a batch), %d in 10 s, within %.0f MB"
            " per batch (%d at once, whisper.max_batch_memory_mb %.0f)",
            self.most_items(),
            self.batch_mb(self.most_items()),
            self.most_items(10.0),
            self.share_mb,
            self.concurrent_batches,
            self.budget_mb,
        )
