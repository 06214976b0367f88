"""The memory budget per Transcriber replica (issue 63): how many chunks a batch may hold, and that an engine given
more reads them in sub-batches that fit, with the same words."""

import dataclasses

import numpy as np
import pytest

from deployments.config import WhisperModelConfig
from deployments.transcriber.engines.batch_memory import BatchMemory, default_budget_mb, value_bytes
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions


def base_on_cpu(budget_mb: float, concurrent: int = 1) -> BatchMemory:
    return BatchMemory("ctranslate2", 512, 4, budget_mb, concurrent)


def test_a_batch_holds_what_its_share_of_the_budget_allows() -> None:
    memory = base_on_cpu(1024, concurrent=2)
    per_item = memory.item_mb(30)
    assert 90 < per_item < 130  # measured 95-105 MB per 30 s item of base int8 (docs: Performance)
    assert memory.most_items(30) == int(512 // per_item)
    assert memory.most_items(10) > memory.most_items(30)  # a short window's item costs a third
    assert base_on_cpu(1024, concurrent=4).most_items(30) < memory.most_items(30)  # more batches at once: less each


def test_an_item_over_the_budget_is_still_read_alone() -> None:
    assert base_on_cpu(16).most_items(30) == 1


def test_batches_keep_every_item_in_order() -> None:
    memory = base_on_cpu(300)
    items = list(range(7))
    batches = memory.batches(items, 30)
    assert [item for batch in batches for item in batch] == items
    assert all(len(batch) <= memory.most_items(30) for batch in batches)


def test_defaults_by_device_and_compute_type() -> None:
    assert default_budget_mb("cpu") < default_budget_mb("cuda")
    assert value_bytes("int8") == 4 and value_bytes("float16") == value_bytes("int8_float16") == 2


def test_the_engine_reads_a_batch_over_its_budget_in_batches_that_fit(
    tiny: CTranslate2Engine, call_samples: np.ndarray
) -> None:
    """tiny.en, a budget that holds one 30 s chunk per batch: three chunks are three encoder passes of one, and the
    words are those of one batch of three (an unbounded budget; batched arithmetic may move a time a little)."""
    chunks = [call_samples[start * SAMPLE_RATE : (start + 5) * SAMPLE_RATE] for start in (8, 14, 21)]
    options = ChunkOptions(language="en", word_timestamps=True)
    seen: list[int] = []
    encode, budgeted = tiny.model.encode, tiny.memory
    unbounded = [[w.word for w in t.words] for t in tiny.transcribe_batch(chunks, options)]

    def counted(features: np.ndarray) -> object:
        seen.append(len(features))
        return encode(features)

    tiny.model.encode = counted
    tiny.memory = dataclasses.replace(budgeted, budget_mb=100, concurrent_batches=1)
    try:
        words = [[w.word for w in t.words] for t in tiny.transcribe_batch(chunks, options)]
    finally:
        tiny.model.encode, tiny.memory = encode, budgeted
    assert seen == [1, 1, 1]
    assert words == unbounded and all(words)


@pytest.mark.parametrize("budget", [None, 2048])
def test_the_setting_reaches_the_engine(budget: int | None) -> None:
    config = WhisperModelConfig(model="embedded:tiny.en", max_batch_memory_mb=budget, parallel_batches=4)
    memory = BatchMemory.for_replica("ctranslate2", 384, 4, config, "cpu")
    assert memory.budget_mb == (budget or 1024) and memory.share_mb == memory.budget_mb / 4


def test_auto_on_a_machine_without_a_gpu_gets_the_cpus_budget(tiny) -> None:
    """`whisper.device: auto` lands on the CPU here: the CPU's default budget, not a GPU's."""
    engine = type(tiny)(tiny.config.model_copy(update={"device": "auto"}))
    assert engine.memory.budget_mb == default_budget_mb("cpu")
