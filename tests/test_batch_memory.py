"""The memory budget per Transcriber replica (issue 63): how many chunks a batch may hold, and that an engine given
more reads them in sub-batches that fit, with the same words."""

import dataclasses

import numpy as np
import pytest

from deployments.config import WhisperModelConfig
from deployments.transcriber.engines.batch_memory import BatchMemory, default_budget_mb, value_bytes
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions


def base_on_cpu(budget_mb: float, concurrent: int = 1, encoder_items: int | None = 1) -> BatchMemory:
    return BatchMemory("ctranslate2", 512, 4, budget_mb, concurrent, encoder_items)


def test_a_batch_holds_what_its_share_of_the_budget_allows() -> None:
    memory = base_on_cpu(1024, concurrent=4)
    one = memory.batch_mb(1, 30)
    assert 90 < one < 130  # measured 86-95 MB for one 30 s item of base int8 (docs: Performance)
    most = memory.most_items(30)
    assert memory.batch_mb(most, 30) <= memory.share_mb < memory.batch_mb(most + 1, 30)
    assert memory.most_items(10) > most  # a short window's item costs a third
    assert base_on_cpu(1024, concurrent=8).most_items(30) < most  # more batches at once: less each


def test_an_encoder_reading_one_item_at_a_time_holds_more_items_in_the_same_share() -> None:
    """The encoder's attention is a batch's largest activation: read one item at a time, a batch's peak is one
    item's encoder or its items' decoder beams, the larger; read whole, every item's encoder at once."""
    one_at_a_time, whole = base_on_cpu(512), base_on_cpu(512, encoder_items=None)
    assert one_at_a_time.batch_mb(1) == whole.batch_mb(1)
    assert one_at_a_time.batch_mb(4) < whole.batch_mb(4) == 4 * whole.batch_mb(1)
    assert one_at_a_time.most_items(30) > whole.most_items(30)


@pytest.mark.parametrize(
    ("engine", "device", "setting", "expected"),
    [
        ("ctranslate2", "cpu", None, 1),
        ("ctranslate2", "cpu", 3, 3),
        ("ctranslate2", "cuda", 3, None),
        ("transformers", "cpu", None, None),
    ],
)
def test_the_encoder_reads_one_item_at_a_time_on_a_cpu_unless_set(
    engine: str, device: str, setting: int | None, expected: int | None
) -> None:
    config = WhisperModelConfig(model="embedded:tiny.en", encoder_batch_size=setting)
    assert BatchMemory.for_replica(engine, 384, 4, config, device).encoder_items == expected


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


def test_the_engine_encodes_a_batch_one_chunk_at_a_time_with_the_words_of_a_whole_batch(
    tiny: CTranslate2Engine, call_samples: np.ndarray
) -> None:
    """On a CPU (the default: one chunk at a time) three chunks in one batch are three encoder calls of one chunk,
    and the words are those of the encoder reading all three at once."""
    chunks = [call_samples[start * SAMPLE_RATE : (start + 5) * SAMPLE_RATE] for start in (8, 14, 21)]
    options = ChunkOptions(language="en", word_timestamps=True)
    seen: list[int] = []
    encode, default = tiny.model.encode, tiny.memory
    assert default.encoder_items == 1 and default.most_items(30) >= 3

    def counted(features: np.ndarray) -> object:
        seen.append(len(features))
        return encode(features)

    tiny.model.encode = counted
    try:
        one_at_a_time = [[w.word for w in t.words] for t in tiny.transcribe_batch(chunks, options)]
        assert seen == [1, 1, 1]
        tiny.memory = dataclasses.replace(default, encoder_items=None)
        whole = [[w.word for w in t.words] for t in tiny.transcribe_batch(chunks, options)]
        assert seen == [1, 1, 1, 3]
    finally:
        tiny.model.encode, tiny.memory = encode, default
    assert one_at_a_time == whole and all(whole)


@pytest.mark.parametrize("budget", [None, 2048])
def test_the_setting_reaches_the_engine(budget: int | None) -> None:
    config = WhisperModelConfig(model="embedded:tiny.en", max_batch_memory_mb=budget, parallel_batches=4)
    memory = BatchMemory.for_replica("ctranslate2", 384, 4, config, "cpu")
    assert memory.budget_mb == (budget or default_budget_mb("cpu")) and memory.share_mb == memory.budget_mb / 4


def test_auto_on_a_machine_without_a_gpu_gets_the_cpus_budget(tiny) -> None:
    """`whisper.device: auto` lands on the CPU here: the CPU's default budget, not a GPU's."""
    engine = type(tiny)(tiny.config.model_copy(update={"device": "auto"}))
    assert engine.memory.budget_mb == default_budget_mb("cpu")
