"""The transformers engine on weights converted from the embedded CTranslate2 checkpoint: the conversion is
exact (same encoder output as CTranslate2 on real speech) and both engines hear the same words."""

import json

import numpy as np
import pytest
import torch
from faster_whisper.audio import pad_or_trim
from nexara.types.transcription import VerboseTranscription

from deployments.config import WhisperModelConfig
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.transcriber.engines.transformers_engine import TransformersEngine
from deployments.types import ChunkOptions, Transcript
from devkit.wer import word_error_rate
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity, render_body


@pytest.fixture(scope="module")
def engines() -> tuple[CTranslate2Engine, TransformersEngine]:
    greedy = {"model": "embedded:tiny.en", "beam_size": 1, "cpu_threads": 2}
    return (
        CTranslate2Engine(WhisperModelConfig(compute_type="float32", **greedy)),
        TransformersEngine(WhisperModelConfig(engine="transformers", **greedy)),
    )


def test_converted_weights_give_the_same_encoder_output(engines, speech_samples: np.ndarray) -> None:
    ct2, hf = engines
    features = pad_or_trim(ct2.model.feature_extractor(speech_samples)[..., :-1])
    ct2_states = np.array(ct2.model.encode(features[np.newaxis]))
    with torch.inference_mode():
        hf_states = hf.model.model.encoder(torch.from_numpy(features[np.newaxis])).last_hidden_state.numpy()
    assert hf_states.shape == ct2_states.shape
    assert np.abs(hf_states - ct2_states).max() < 1e-2 * np.abs(ct2_states).max()


def test_greedy_decoding_gives_the_same_words(engines, speech_samples: np.ndarray) -> None:
    """Plain greedy decoding (no timestamp rules, which the two libraries implement differently)."""
    ct2, hf = engines
    features = pad_or_trim(ct2.model.feature_extractor(speech_samples)[..., :-1])[np.newaxis]
    prompt = ct2.model.hf_tokenizer.encode("<|startoftranscript|><|notimestamps|>", add_special_tokens=False).ids
    ct2_tokens = ct2.model.model.generate(ct2.model.encode(features), [prompt], beam_size=1)[0].sequences_ids[0]
    with torch.inference_mode():
        hf_tokens = hf.model.generate(torch.from_numpy(features), return_timestamps=False, num_beams=1)[0].tolist()
    ct2_text = ct2.model.hf_tokenizer.decode(ct2_tokens)
    hf_text = hf.processor.tokenizer.decode(hf_tokens, skip_special_tokens=True)
    assert word_error_rate(ct2_text, hf_text) == 0.0, (ct2_text, hf_text)
    assert "know you were there" in hf_text.lower()


def test_transcribe_batch_gives_timed_segments(engines, speech_samples: np.ndarray) -> None:
    _, hf = engines
    transcripts = hf.transcribe_batch([speech_samples, speech_samples[: 4 * 16_000]], ChunkOptions(language="en"))
    assert len(transcripts) == 2
    for transcript in transcripts:
        assert transcript.segments and "hello" in transcript.segments[0].text.lower()
        assert all(0 <= s.start < s.end for s in transcript.segments)  # no zero-length cue


@pytest.mark.parametrize("engine_index", [0, 1], ids=["ctranslate2", "transformers"])
def test_text_only_decoding_gives_one_segment_per_chunk(engines, speech_samples: np.ndarray, engine_index: int) -> None:
    """Without timestamp tokens (json and text responses) each chunk is one segment spanning it, with the
    words that timestamped decoding hears."""
    engine = engines[engine_index]
    chunks = [speech_samples, speech_samples[: 4 * 16_000]]
    timed = engine.transcribe_batch(chunks, ChunkOptions(language="en"))
    text_only = engine.transcribe_batch(chunks, ChunkOptions(language="en", segment_timestamps=False))
    for chunk, with_times, without in zip(chunks, timed, text_only, strict=True):
        assert [(s.start, s.end) for s in without.segments] == [(0.0, round(len(chunk) / 16_000, 3))]
        timed_text = "".join(s.text for s in with_times.segments)
        assert word_error_rate(timed_text, without.segments[0].text) <= 0.2, (timed_text, without.segments[0].text)


@pytest.mark.parametrize(
    ("beam_size", "segment_timestamps"), [(1, True), (2, False)], ids=["greedy-timestamped", "beam-text-only"]
)  # each decoding and each kind of segment once (the four pairs cost half a minute more of the test loop)
def test_words_and_segments_get_their_probabilities(
    engines, speech_samples: np.ndarray, segment_timestamps: bool, beam_size: int
) -> None:
    """Words' probabilities and segments' avg_logprob come from the generation's scores; a prompt guides
    decoding but is not part of the transcript."""
    _, hf = engines
    options = ChunkOptions(
        language="en", word_timestamps=True, segment_timestamps=segment_timestamps, beam_size=beam_size,
        prompt="Kelly and Sheila.",
    )  # fmt: skip
    for transcript in hf.transcribe_batch([speech_samples, speech_samples[: 4 * 16_000]], options):
        assert transcript.words and transcript.segments
        assert all(isinstance(word.prob, float) and 0 < word.prob <= 1 for word in transcript.words)
        assert all(segment.avg_logprob <= 0 for segment in transcript.segments)
        assert any(segment.avg_logprob < 0 for segment in transcript.segments)
        assert "".join(word.word for word in transcript.words) == "".join(s.text for s in transcript.segments)
        assert "kelly" not in "".join(word.word for word in transcript.words).lower()


def test_segments_without_words_get_avg_logprob(engines, speech_samples: np.ndarray) -> None:
    _, hf = engines
    (transcript,) = hf.transcribe_batch([speech_samples], ChunkOptions(language="en"))
    assert not transcript.words
    assert all(segment.avg_logprob <= 0 for segment in transcript.segments)
    assert any(segment.avg_logprob < 0 for segment in transcript.segments)


def test_the_sdk_reads_the_engines_words(engines, speech_samples: np.ndarray) -> None:
    """The contract that failed with `prob: null`: the edge's verbose_json with word granularity, as the
    nexara SDK parses it (its Word's `prob` is a float)."""
    _, hf = engines
    (chunk,) = hf.transcribe_batch([speech_samples], ChunkOptions(language="en", word_timestamps=True))
    transcript = Transcript(
        language=chunk.language, duration=len(speech_samples) / 16_000, segments=chunk.segments, words=chunk.words
    )
    granularities = [TimestampGranularity.word, TimestampGranularity.segment]
    body = render_body(transcript, ResponseFormat.verbose_json, granularities)
    parsed = VerboseTranscription.model_validate(json.loads(json.dumps(body)))
    assert parsed.words and len(parsed.words) == len(chunk.words)
    assert all(0 < word.prob <= 1 for word in parsed.words)
    assert parsed.segments and all(segment.avg_logprob <= 0 for segment in parsed.segments)
