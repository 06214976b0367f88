"""Whisper on Hugging Face transformers (`WhisperForConditionalGeneration`): float16 with SDPA attention on
GPU, float32 on CPU. Batches are one `generate` call; segments come from Whisper's timestamp tokens and
words from its cross-attention token timestamps."""

from typing import Any

import numpy as np
import torch
from faster_whisper.transcribe import get_compression_ratio
from transformers import WhisperForConditionalGeneration, WhisperProcessor

from deployments.config import WhisperModelConfig
from deployments.transcriber._model_store import resolve_hf_model
from deployments.transcriber.segmenting import fit_in_chunk
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Segment, Word

SECONDS_PER_TIMESTAMP = 0.02


class TransformersEngine:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.config = config
        use_cuda = config.device in ("cuda", "auto") and torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.dtype = torch.float16 if use_cuda else torch.float32
        if not use_cuda and config.cpu_threads:
            torch.set_num_threads(config.cpu_threads)
        path = resolve_hf_model(config.model)
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

    def _features(self, chunks: list[np.ndarray]) -> torch.Tensor:
        extracted = self.processor.feature_extractor(chunks, sampling_rate=SAMPLE_RATE, return_tensors="pt")
        return extracted.input_features.to(self.device, self.dtype)

    @torch.inference_mode()
    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        beams = options.beam_size or self.config.beam_size
        kwargs: dict = {"return_timestamps": options.segment_timestamps, "num_beams": beams}
        if self.multilingual:  # with language None, generate detects each item's language itself
            kwargs |= {"language": options.language, "task": "transcribe"}
        if options.prompt:
            kwargs["prompt_ids"] = torch.tensor(self.processor.get_prompt_ids(options.prompt), device=self.device)
        if options.temperature > 0:
            kwargs |= {"do_sample": True, "temperature": options.temperature, "num_beams": 1}
        if options.word_timestamps:
            kwargs |= {"return_token_timestamps": True, "return_dict_in_generate": True}
        output = self.model.generate(self._features(chunks), **kwargs)
        if options.word_timestamps:
            sequences, token_times = output["sequences"], output["token_timestamps"]
        else:
            sequences, token_times = output, None
        return [
            self._chunk_transcript(
                sequences[i].tolist(),
                None if token_times is None else token_times[i].tolist(),
                len(chunks[i]) / SAMPLE_RATE,
                options,
            )
            for i in range(len(chunks))
        ]

    def _chunk_transcript(
        self, tokens: list[int], token_times: list[float] | None, duration: float, options: ChunkOptions
    ) -> ChunkTranscript:
        """Split at Whisper's timestamp tokens (<|t|> text <|t|>) into segments; group text tokens into words.
        The language is the one in the decoder prompt at the start of `tokens`."""
        language = next((self.lang_codes[token] for token in tokens if token in self.lang_codes), options.language)
        segments: list[Segment] = []
        words: list[Word] = []
        start = 0.0
        text_tokens: list[int] = []
        word_tokens: list[int] = []
        word_start = 0.0

        def close_word(at: float) -> None:
            if word_tokens:
                text = self.processor.tokenizer.decode(word_tokens)
                words.append(Word(word=text, start=round(word_start, 3), end=round(max(at, word_start), 3), prob=None))
                word_tokens.clear()

        def close_segment(end: float) -> None:
            if text_tokens:
                text = self.processor.tokenizer.decode(text_tokens)
                segments.append(
                    Segment(id=len(segments), seek=0, start=round(start, 3), end=round(max(end, start), 3), text=text,
                            tokens=list(text_tokens), temperature=options.temperature, avg_logprob=0.0,
                            compression_ratio=get_compression_ratio(text), no_speech_prob=0.0)
                )  # fmt: skip
                text_tokens.clear()

        for index, token in enumerate(tokens):
            time = token_times[index] if token_times is not None and index < len(token_times) else None
            if token >= self.timestamp_begin:
                seconds = (token - self.timestamp_begin) * SECONDS_PER_TIMESTAMP
                close_word(seconds if time is None else time)
                close_segment(seconds)
                start = seconds
            elif token < self.eot:  # text; special tokens (sot, language, task, eot) are skipped
                if token_times is not None:
                    assert time is not None, "the token timestamps cover every text token"
                    piece = self.processor.tokenizer.convert_ids_to_tokens(token)
                    if piece.startswith("Ġ") or not word_tokens:  # Ġ: byte-level BPE's leading space
                        close_word(time)
                        word_start = time
                    word_tokens.append(token)
                text_tokens.append(token)
        close_word(duration)
        close_segment(duration)
        # Token times can put a word (or segment) on no time of its own: no zero-length cue reaches a client.
        return ChunkTranscript(
            language=language or "en", segments=fit_in_chunk(segments, duration), words=fit_in_chunk(words, duration)
        )
