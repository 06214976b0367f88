"""The contract with faster-whisper that the CTranslate2 engine relies on (faster-whisper is pinned to
1.2.x): on real speech, its batch step with timestamp tokens gives what faster-whisper's own
`BatchedInferencePipeline` gives (each segment and word fitted into the chunk with a length of its own),
language detection runs once per batch, and a chunk's word times do not depend on its batch neighbours.
Timed by alignment (the default), segments carry the text-only decode's words at the times the
timestamp-token decode gives them, and no segment or word is without a length."""

import itertools
import statistics

import numpy as np
import pytest
from faster_whisper import BatchedInferencePipeline
from faster_whisper.audio import pad_or_trim
from faster_whisper.tokenizer import Tokenizer

from deployments.config import WhisperModelConfig
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.transcriber.segmenting import fit_in_chunk
from deployments.types import SAMPLE_RATE, ChunkOptions, Word
from devkit.wer import matched_words


@pytest.fixture(scope="module")
def tiny_tokens(tiny: CTranslate2Engine) -> CTranslate2Engine:
    """The same model, timing segments by Whisper's timestamp tokens."""
    engine = CTranslate2Engine.__new__(CTranslate2Engine)
    engine.config, engine.model = tiny.config.model_copy(update={"timestamps": "tokens"}), tiny.model
    engine.memory = tiny.memory
    return engine


def test_one_chunk_gives_what_faster_whispers_batched_pipeline_gives(
    tiny_tokens: CTranslate2Engine, call_samples
) -> None:
    tiny = tiny_tokens
    chunk = call_samples[6 * SAMPLE_RATE : 16 * SAMPLE_RATE]
    options = ChunkOptions(language="en", word_timestamps=True)
    (ours,) = tiny.transcribe_batch([chunk], options)

    model = tiny.model
    tokenizer = Tokenizer(model.hf_tokenizer, False, task="transcribe", language="en")
    pipeline = BatchedInferencePipeline(model)
    features = np.stack([pad_or_trim(model.feature_extractor(chunk)[..., :-1])])
    metadata = [{"offset": 0.0, "duration": len(chunk) / SAMPLE_RATE, "segments": []}]
    (theirs,) = pipeline.forward(features, tokenizer, metadata, tiny._options(tokenizer, options))

    def fitted(timed: list[dict], text: str) -> list[tuple[str, float, float]]:  # as ours are: none zero-length
        spans = [Word(word=item[text], start=round(item["start"], 3), end=round(item["end"], 3)) for item in timed]
        return [(span.word, span.start, span.end) for span in fit_in_chunk(spans, len(chunk) / SAMPLE_RATE)]

    assert [(s.text, s.start, s.end) for s in ours.segments] == fitted(theirs, "text")
    assert [(w.word, w.start, w.end) for w in ours.words] == fitted([w for s in theirs for w in s["words"]], "word")


def test_word_times_of_a_chunk_do_not_depend_on_its_batch_neighbour(tiny: CTranslate2Engine, call_samples) -> None:
    mine = call_samples[6 * SAMPLE_RATE : 14 * SAMPLE_RATE]
    other_request = call_samples[14 * SAMPLE_RATE : 30 * SAMPLE_RATE]  # ends late: faster-whisper would carry that on
    options = ChunkOptions(language="en", word_timestamps=True)
    (alone,) = tiny.transcribe_batch([mine], options)
    _, beside = tiny.transcribe_batch([other_request, mine], options)
    assert alone.words and [(w.word, w.start, w.end) for w in alone.words] == [
        (w.word, w.start, w.end) for w in beside.words
    ]


def test_alignment_times_the_text_only_decode_as_timestamp_tokens_would(
    tiny: CTranslate2Engine, tiny_tokens: CTranslate2Engine, call_samples
) -> None:
    chunks = [call_samples[: 22 * SAMPLE_RATE], call_samples[24 * SAMPLE_RATE : 30 * SAMPLE_RATE]]
    timed = ChunkOptions(language="en", word_timestamps=True)
    aligned = tiny.transcribe_batch(chunks, timed)
    text_only = tiny.transcribe_batch(chunks, ChunkOptions(language="en", segment_timestamps=False))
    by_tokens = tiny_tokens.transcribe_batch(chunks, timed)

    starts = []
    for chunk, ours, plain, theirs in zip(chunks, aligned, text_only, by_tokens, strict=True):
        assert "".join(s.text for s in ours.segments) == "".join(s.text for s in plain.segments)  # same decode
        assert len(ours.segments) > 1 or len(chunk) < 10 * SAMPLE_RATE  # cut at sentences and pauses
        words = iter(ours.words)
        for segment in ours.segments:  # each segment is its words, timed by them
            mine = [next(words) for _ in range(len(segment.text.split()))]
            assert "".join(w.word for w in mine) == segment.text
            assert (segment.start, segment.end) == (mine[0].start, mine[-1].end)
            assert 0 <= segment.start < segment.end <= len(chunk) / SAMPLE_RATE
        assert all(0 <= w.start < w.end <= len(chunk) / SAMPLE_RATE for w in ours.words)  # none without a length
        assert all(a.end <= b.start for a, b in itertools.pairwise(ours.words))  # in order, none overlapping
        starts += [abs(a.start - b.start) for a, b in matched_words(ours.words, theirs.words)]
    assert len(starts) > 40 and statistics.median(starts) <= 0.1


def test_segments_are_timed_by_alignment_without_words_asked_for(tiny: CTranslate2Engine, call_samples) -> None:
    (transcript,) = tiny.transcribe_batch([call_samples[: 22 * SAMPLE_RATE]], ChunkOptions(language="en"))
    assert transcript.words == [] and len(transcript.segments) > 1
    assert all(a.end <= b.start for a, b in itertools.pairwise(transcript.segments))


class _CountingWhisper:
    """A ctranslate2 Whisper model that counts language detections."""

    def __init__(self, model) -> None:
        self.model = model
        self.detections = 0

    def detect_language(self, *args, **kwargs):  # noqa: ANN002
        self.detections += 1
        return self.model.detect_language(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def test_language_is_detected_once_per_batch_with_a_multilingual_model(call_samples) -> None:
    engine = CTranslate2Engine(WhisperModelConfig(model="embedded:base", cpu_threads=2))
    counting = _CountingWhisper(engine.model.model)
    engine.model.model = counting
    chunks = [call_samples[6 * SAMPLE_RATE : 12 * SAMPLE_RATE], call_samples[14 * SAMPLE_RATE : 20 * SAMPLE_RATE]]
    transcripts = engine.transcribe_batch(chunks, ChunkOptions())
    assert counting.detections == 1
    assert [transcript.language for transcript in transcripts] == ["en", "en"]
    assert "hello" in transcripts[0].segments[0].text.lower()
