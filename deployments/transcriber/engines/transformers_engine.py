"""Whisper on Hugging Face transformers (`WhisperForConditionalGeneration`): float16 with SDPA attention on
GPU, float32 on CPU. Batches are one `generate` call; segments come from Whisper's timestamp tokens and
words from its cross-attention token timestamps.

Each token's log-probability is read from the generation's scores (the step's logits after Whisper's
logits processors, the temperature undone), as OpenAI's and faster-whisper's `avg_logprob` are: a segment's
`avg_logprob` is the mean over its text tokens, a word's `prob` the mean of its tokens' probabilities
(faster-whisper's word probability). `no_speech_prob` stays 0.0: transformers scores only the generated
steps, and the no-speech token's probability is read at the start-of-transcript step, which is part of the
decoder prompt (transformers computes it only with its no-speech fallback, which can drop a chunk's text).
"""

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from faster_whisper.transcribe import get_compression_ratio
from transformers import WhisperForConditionalGeneration, WhisperProcessor

from deployments.config import WhisperModelConfig
from deployments.transcriber._model_store import cache_dir, resolve_hf_model
from deployments.transcriber.engines.base import Stopwatch
from deployments.transcriber.engines.batch_memory import BatchMemory
from deployments.transcriber.segmenting import fit_in_chunk
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Segment, Word

SECONDS_PER_TIMESTAMP = 0.02


class _Decoded(NamedTuple):
    """One batch item's decoding: `tokens` to transcribe, aligned with their `times` (with word timestamps)
    and `logprobs`; `with_prompt` adds the decoder prompt, where the language token is."""

    with_prompt: list[int]
    tokens: list[int]
    times: list[float] | None
    logprobs: list[float]


class TransformersEngine:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.config = config
        use_cuda = config.device in ("cuda", "auto") and torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.dtype = torch.float16 if use_cuda else torch.float32
        if not use_cuda and config.cpu_threads:
            torch.set_num_threads(config.cpu_threads)
        path = resolve_hf_model(config.model, cache_dir())
        self.processor = WhisperProcessor.from_pretrained(path)
        self.model = WhisperForConditionalGeneration.from_pretrained(path, dtype=self.dtype, attn_implementation="sdpa")
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' wrapper hides to()'s signature
        # Whisper's fields (is_multilingual, no_timestamps_token_id, lang_to_id) are extra attributes that
        # GenerationConfig does not declare.
        generation: Any = self.model.generation_config
        self.multilingual = bool(generation.is_multilingual)
        self.timestamp_begin = generation.no_timestamps_token_id + 1
        self.eot = generation.eos_token_id
        self.lang_codes = {
            token_id: token[2:-2] for token, token_id in (getattr(generation, "lang_to_id", None) or {}).items()
        }
        width, value_bytes = int(self.model.config.d_model), 2 if use_cuda else 4  # float16 on GPU, else float32
        self.memory = BatchMemory.for_replica("transformers", width, value_bytes, config, "cuda" if use_cuda else "cpu")
        self.running = threading.BoundedSemaphore(config.parallel_batches)

    def _features(self, chunks: list[np.ndarray]) -> torch.Tensor:
        extracted = self.processor.feature_extractor(chunks, sampling_rate=SAMPLE_RATE, return_tensors="pt")
        features: torch.Tensor = extracted.input_features.to(self.device, self.dtype)
        return features

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        """The chunks in batches that fit the memory budget (`batch_memory.py`), at most `parallel_batches` of
        them in `generate` at once (PyTorch would run every caller's batch together)."""
        if options.task == "translate" and not self.multilingual:
            raise ValueError("an English-only Whisper model cannot translate (the Transcriber's callers check first)")
        transcripts: list[ChunkTranscript] = []
        for batch in self.memory.batches(chunks):
            with self.running:
                transcripts += self._transcribe_batch(batch, options)
        return transcripts

    @torch.inference_mode()
    def _transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        beams = options.beam_size or self.config.beam_size
        kwargs: dict[str, Any] = {
            "return_timestamps": options.segment_timestamps,
            "num_beams": beams,
            "return_dict_in_generate": True,
            "output_scores": True,
        }
        if self.multilingual:  # with language None, generate detects each item's language itself
            kwargs |= {"language": options.language, "task": options.task}
        if options.prompt:
            kwargs["prompt_ids"] = torch.tensor(self.processor.get_prompt_ids(options.prompt), device=self.device)
        if options.temperature > 0:
            kwargs |= {"do_sample": True, "temperature": options.temperature, "num_beams": 1}
        if options.word_timestamps:
            kwargs["return_token_timestamps"] = True
        clock = Stopwatch()
        with clock.stage("features"):
            features = self._features(chunks)
        with clock.stage("decoder"):  # generate runs the encoder too
            output = self.model.generate(features, **kwargs)
        return clock.shared(
            [
                self._chunk_transcript(
                    self._decoded(output, i, options.temperature), len(chunks[i]) / SAMPLE_RATE, options
                )
                for i in range(len(chunks))
            ]
        )

    @staticmethod
    def _decoded(output: dict[str, Any], index: int, temperature: float) -> _Decoded:
        """Batch item `index` of `generate`'s output: its tokens with their times and log-probabilities."""
        sequence = output["sequences"][index]
        all_times = output.get("token_timestamps")
        times = None if all_times is None else all_times[index].tolist()
        if "segments" in output:  # timestamped decoding: the segments' tokens, without the decoder prompt
            scored: dict[int, list[float]] = {}  # each generate call's result, scored once
            logprobs: list[float] = []
            for segment in output["segments"][index]:
                result = segment["result"]
                if id(result) not in scored:
                    scored[id(result)] = _token_logprobs(result["sequences"], result["scores"], temperature)
                logprobs += scored[id(result)][slice(*segment["idxs"])]
            return _Decoded(sequence.tolist(), sequence.tolist(), times, logprobs)
        # text-only decoding, one generate call: the sequence starts with the decoder prompt (the language
        # token, and the prompt's text, which is not part of the transcript)
        scores = [step[index] for step in output["scores"]]
        start = len(sequence) - len(scores)
        logprobs = _token_logprobs(sequence, scores, temperature)
        return _Decoded(
            sequence.tolist(), sequence[start:].tolist(), None if times is None else times[start:], logprobs[start:]
        )

    def _chunk_transcript(self, decoded: _Decoded, duration: float, options: ChunkOptions) -> ChunkTranscript:
        """Split at Whisper's timestamp tokens (<|t|> text <|t|>) into segments; group text tokens into words.
        The language is the one in the decoder prompt."""
        tokens, token_times, token_logprobs = decoded.tokens, decoded.times, decoded.logprobs
        language = next(
            (self.lang_codes[token] for token in decoded.with_prompt if token in self.lang_codes), options.language
        )
        segments: list[Segment] = []
        words: list[Word] = []
        start = 0.0
        text_tokens: list[int] = []
        text_logprobs: list[float] = []
        word_tokens: list[int] = []
        word_logprobs: list[float] = []
        word_start = 0.0

        def close_word(at: float) -> None:
            if word_tokens:
                text = self.processor.tokenizer.decode(word_tokens)
                prob = float(np.mean(np.exp(word_logprobs)))
                words.append(Word(word=text, start=round(word_start, 3), end=round(max(at, word_start), 3), prob=prob))
                word_tokens.clear()
                word_logprobs.clear()

        def close_segment(end: float) -> None:
            if text_tokens:
                text = self.processor.tokenizer.decode(text_tokens)
                avg_logprob = float(np.mean(text_logprobs))
                segments.append(
                    Segment(id=len(segments), seek=0, start=round(start, 3), end=round(max(end, start), 3), text=text,
                            tokens=list(text_tokens), temperature=options.temperature, avg_logprob=avg_logprob,
                            compression_ratio=get_compression_ratio(text), no_speech_prob=0.0)
                )  # fmt: skip
                text_tokens.clear()
                text_logprobs.clear()

        for index, token in enumerate(tokens):
            time = token_times[index] if token_times is not None and index < len(token_times) else None
            if token >= self.timestamp_begin:
                seconds = (token - self.timestamp_begin) * SECONDS_PER_TIMESTAMP
                close_word(seconds if time is None else time)
                close_segment(seconds)
                start = seconds
            elif token < self.eot:  # text; special tokens (sot, language, task, eot) are skipped
                logprob = token_logprobs[index]
                if token_times is not None:
                    assert time is not None, "the token timestamps cover every text token"
                    piece = self.processor.tokenizer.convert_ids_to_tokens(token)
                    if piece.startswith("Ġ") or not word_tokens:  # Ġ: byte-level BPE's leading space
                        close_word(time)
                        word_start = time
                    word_tokens.append(token)
                    word_logprobs.append(logprob)
                text_tokens.append(token)
                text_logprobs.append(logprob)
        close_word(duration)
        close_segment(duration)
        # Token times can put a word (or segment) on no time of its own: no zero-length cue reaches a client.
        return ChunkTranscript(
            language=language or "en", segments=fit_in_chunk(segments, duration), words=fit_in_chunk(words, duration)
        )


def _token_logprobs(sequence: torch.Tensor, scores: Sequence[torch.Tensor], temperature: float) -> list[float]:
    """The log-probability of each token of `sequence` at its generation step: `scores` holds one step's
    processed scores (temperature-divided logits, or beam search's log-probabilities) per generated token,
    the last `len(scores)` of `sequence`; the decoder prompt before them gets 0.0."""
    generated = sequence[len(sequence) - len(scores) :]
    steps = torch.stack([step.float() for step in scores]).to(generated.device)
    if temperature > 0:
        steps = steps * temperature  # back to the model's own distribution, as Whisper's avg_logprob
    logprobs = steps.log_softmax(-1).gather(-1, generated.unsqueeze(-1)).squeeze(-1)
    return [0.0] * (len(sequence) - len(scores)) + logprobs.tolist()
