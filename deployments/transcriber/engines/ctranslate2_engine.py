"""Whisper on CTranslate2 through faster-whisper: int8 on CPU, float16 on GPU.

A batch is one encoder pass, one language detection (a single decoder step on that encoder output, only
when no language was given) and one beam search for all chunks; word alignment is faster-whisper's own.

Timed output (`timestamps: alignment`, the default) decodes the same text-only tokens as plain text does,
then aligns the batch's words in one more decoder pass over the same encoder output (cross-attention and
dynamic time warping, `find_alignment`) and cuts each chunk into segments at sentence ends and pauses
(`deployments.transcriber.segmenting`). With `timestamps: tokens`, segments come from Whisper's timestamp tokens, split
by faster-whisper. The steps are faster-whisper's `BatchedInferencePipeline.forward`, with two changes:
- the languages it detects are kept, with their probabilities (its pipeline detects them but does not
  return them), so detection runs once per batch;
- word timestamps of each chunk are finished on their own (faster-whisper carries the end of the last word
  from one batch item into the next, so a chunk's word times would depend on its neighbours).

This reaches inside faster-whisper (`WhisperModel._split_segments_by_timestamps`, and
`add_word_timestamps` calling `find_alignment` and `frames_per_second` on its model), so faster-whisper is
pinned to 1.2.x and `tests/test_ctranslate2_engine.py` holds the contract: the same segments and words as
`BatchedInferencePipeline` for one chunk, and the same words for a chunk alone and beside another. Either
way, every segment and word is then fitted into its chunk with a length of its own (`fit_in_chunk`).
"""

from math import ceil
from typing import Any

import numpy as np
from ctranslate2 import StorageView
from ctranslate2.models import WhisperGenerationResult
from faster_whisper import WhisperModel
from faster_whisper.audio import pad_or_trim
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import TranscriptionOptions as FasterWhisperOptions
from faster_whisper.transcribe import get_compression_ratio, get_suppressed_tokens

from deployments.config import WhisperModelConfig
from deployments.transcriber._model_store import cache_dir, resolve_ctranslate2_model
from deployments.transcriber.engines._ct2_results import OneItemAlignment, chunk_transcript
from deployments.transcriber.engines.base import Stopwatch
from deployments.transcriber.engines.batch_memory import WHISPER_WINDOW_S, BatchMemory, value_bytes
from deployments.transcriber.engines.short_window import (
    COMPRESSION_RATIO_THRESHOLD,
    MAX_TOKENS_PER_S,
    RETRY_WINDOW_FACTOR,
    RETRY_WINDOW_MIN_S,
    misses_speech,
    repeats_itself,
    without_loop_after_audio,
)
from deployments.transcriber.segmenting import segment_groups
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript


class CTranslate2Engine:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.config = config
        self.model = WhisperModel(
            resolve_ctranslate2_model(config.model, cache_dir()),
            device=config.device,
            compute_type=config.compute_type,
            cpu_threads=config.cpu_threads,
            num_workers=config.parallel_batches,  # concurrent calls from two threads run in parallel
            local_files_only=config.model.startswith("embedded:"),
        )
        self.memory = BatchMemory.for_replica(
            "ctranslate2", self._width(), value_bytes(config.compute_type), config, self.model.model.device
        )

    def _width(self) -> int:
        """The model's d_model, from the encoder's output for one second (CTranslate2 does not say it otherwise)."""
        features = self._features(np.zeros(SAMPLE_RATE, dtype=np.float32), self.model.frames_per_second)
        width: int = self.model.encode(features[None]).shape[-1]
        return width

    @property
    def multilingual(self) -> bool:
        """Whether the model knows languages besides English, and so can translate (a `.en` model cannot)."""
        return bool(self.model.model.is_multilingual)

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        if options.task == "translate" and not self.multilingual:
            raise ValueError("an English-only Whisper model cannot translate (the Transcriber's callers check first)")
        if options.encoder_window == "full":
            return self._transcribe(chunks, options, None)
        buckets: dict[int, list[int]] = {}  # window (s) -> its chunks: a 3 s reading never pays for a 14 s one
        for index, chunk in enumerate(chunks):
            buckets.setdefault(self._window_s(len(chunk) / SAMPLE_RATE, options.shortest_window_s), []).append(index)
        transcripts: dict[int, ChunkTranscript] = {}
        for window_s, indices in sorted(buckets.items()):
            bucket = [chunks[i] for i in indices]
            transcripts.update(zip(indices, self._read_short(bucket, options, window_s), strict=True))
        return [transcripts[index] for index in range(len(chunks))]

    def _window_s(self, duration_s: float, shortest_s: float | None = None) -> int:
        """The encoder window (whole seconds) a chunk of this length is read in: 30 when that is no shorter."""
        shortest_s = self.config.short_window_min_s if shortest_s is None else shortest_s
        window_s = max(shortest_s, ceil(duration_s + self.config.short_window_margin_s))
        return int(min(window_s, self.model.feature_extractor.chunk_length))

    def _read_short(self, chunks: list[np.ndarray], options: ChunkOptions, window_s: int) -> list[ChunkTranscript]:
        """Chunks in a short window; those whose reading failed (`short_window.py`) are read again in a window
        `RETRY_WINDOW_FACTOR` times as long (at least `RETRY_WINDOW_MIN_S`), and only those that fail there too in
        Whisper's own 30 s: a 4 s live reading that looped cost the encoder a full 30 s pass, a tenth of all
        readings and half the live encoder's time (issue 61)."""
        if window_s >= self.model.feature_extractor.chunk_length:
            return self._transcribe(chunks, options, None)
        frames = int(window_s * self.model.frames_per_second)
        transcripts = self._transcribe(chunks, options, frames, _short_window_tokens(chunks))
        failed = self._failed(chunks, transcripts)
        retry_s = max(RETRY_WINDOW_MIN_S, RETRY_WINDOW_FACTOR * window_s)
        if failed and retry_s < self.model.feature_extractor.chunk_length:
            self._read_again(chunks, transcripts, failed, options, int(retry_s * self.model.frames_per_second))
            failed = self._failed(chunks, transcripts, failed)
        if failed:  # the short window's known failures: read these chunks again in Whisper's own 30 s
            self._read_again(chunks, transcripts, failed, options, None)
        return transcripts

    def _failed(
        self, chunks: list[np.ndarray], transcripts: list[ChunkTranscript], among: list[int] | None = None
    ) -> list[int]:
        """The chunks whose short-window reading looped or missed speech; a loop only into the padding after the
        audio is trimmed off instead (in `transcripts`)."""
        failed = []
        for i in range(len(chunks)) if among is None else among:
            transcript = transcripts[i]
            if (trimmed := without_loop_after_audio(transcript, chunks[i])) is not None:
                transcripts[i] = transcript = trimmed  # the words written again into the padding: dropped
            if repeats_itself(transcript, len(chunks[i])) or misses_speech(transcript, chunks[i]):
                failed.append(i)
        return failed

    def _read_again(
        self,
        chunks: list[np.ndarray],
        transcripts: list[ChunkTranscript],
        indices: list[int],
        options: ChunkOptions,
        frames: int | None,
    ) -> None:
        """Read these chunks again in a longer window (`frames`; None: 30 s), in place; every reading's cost counts."""
        again_chunks = [chunks[i] for i in indices]
        max_tokens = None if frames is None else _short_window_tokens(again_chunks)
        again = self._transcribe(again_chunks, options, frames, max_tokens)
        for i, transcript in zip(indices, again, strict=True):
            transcripts[i] = transcript.model_copy(update={"compute": transcript.compute + transcripts[i].compute})

    def _transcribe(
        self, chunks: list[np.ndarray], options: ChunkOptions, frames: int | None, max_tokens: int | None = None
    ) -> list[ChunkTranscript]:
        """The chunks in batches that fit the memory budget (`batch_memory.py`), each `_transcribe_batch`."""
        window_s = WHISPER_WINDOW_S if frames is None else frames / self.model.frames_per_second
        transcripts: list[ChunkTranscript] = []
        for batch in self.memory.batches(chunks, window_s):
            transcripts += self._transcribe_batch(batch, options, frames, max_tokens)
        return transcripts

    def _transcribe_batch(
        self, chunks: list[np.ndarray], options: ChunkOptions, frames: int | None, max_tokens: int | None = None
    ) -> list[ChunkTranscript]:
        """One batch through the encoder and decoder: in Whisper's 30 s window (`frames` None), or in a window
        of `frames` feature frames that the audio, padded with silence as Whisper pads it, fills."""
        multilingual = self.model.model.is_multilingual
        detect = multilingual and options.language is None
        language = options.language or "en"  # with `detect`, only a placeholder in the prompt
        tokenizer = Tokenizer(self.model.hf_tokenizer, multilingual, task=options.task, language=language)
        timed_by_alignment = options.segment_timestamps and self.config.timestamps == "alignment"
        whisper_options = self._options(tokenizer, options, timed_by_alignment)
        clock = Stopwatch()
        with clock.stage("features"):
            features = np.stack([self._features(chunk, frames) for chunk in chunks])
        with clock.stage("encoder"):
            encoded = self._encode(features)  # an array behind the StorageView lives as long as it
            encoder_output = encoded if isinstance(encoded, StorageView) else StorageView.from_array(encoded)

        prompt = self.model.get_prompt(
            tokenizer,
            previous_tokens=tokenizer.encode(options.prompt) if options.prompt else [],
            without_timestamps=whisper_options.without_timestamps,
        )
        languages = [language] * len(chunks)
        probabilities: list[float | None] = [None] * len(chunks)
        with clock.stage("decoder"):
            prompts = [prompt.copy() for _ in chunks]
            if detect:  # one decoder step on the encoder output; the prompt then carries each chunk's language
                found = self.model.model.detect_language(encoder_output)
                languages = [item[0][0].strip("<|>") for item in found]
                probabilities = [float(item[0][1]) for item in found]
                slot = prompt.index(tokenizer.language)
                for item_prompt, item in zip(prompts, found, strict=True):
                    item_prompt[slot] = tokenizer.tokenizer.token_to_id(item[0][0])
            max_length = min(self.model.max_length, len(prompt) + max_tokens if max_tokens else self.model.max_length)
            results = self._generate(encoder_output, prompts, whisper_options, max_length)
        durations = [len(chunk) / SAMPLE_RATE for chunk in chunks]
        sizes = [int(ceil(duration) * self.model.frames_per_second) for duration in durations]
        segmented = [
            self._segments(tokenizer, result, duration, size, whisper_options.length_penalty)
            for result, duration, size in zip(results, durations, sizes, strict=True)
        ]
        if whisper_options.word_timestamps:
            with clock.stage("alignment"):
                self._add_word_timestamps(segmented, tokenizer, encoded, encoder_output, sizes, whisper_options)
        transcripts = [
            chunk_transcript(segments, chunk_language, options.temperature, duration).model_copy(
                update={"language_probability": probability}
            )
            for segments, chunk_language, probability, duration in zip(
                segmented, languages, probabilities, durations, strict=True
            )
        ]
        if timed_by_alignment:
            transcripts = [self._segments_from_words(transcript, tokenizer, options) for transcript in transcripts]
        return clock.shared(transcripts)

    def _encode(self, features: np.ndarray) -> StorageView | np.ndarray:
        """The batch's encoder output, `memory.encoder_items` chunks at a time: the encoder's attention over the
        window is a batch's largest activation, so on a CPU reading one chunk at a time keeps a batch's peak to
        one chunk's encoder and its decoder's beams (issue 63), at the same speed per chunk (docs: Performance)."""
        steps = self._encoder_steps(len(features))
        if len(steps) == 1:
            whole: StorageView = self.model.encode(features)
            return whole
        return np.concatenate([np.asarray(self.model.encode(features[step])) for step in steps])

    def _encoder_steps(self, items: int) -> list[slice]:
        """A batch of `items` cut as the encoder reads it: `memory.encoder_items` at a time (None: all at once)."""
        step = self.memory.encoder_items or items
        return [slice(start, start + step) for start in range(0, items, step)]

    def _generate(
        self,
        encoder_output: StorageView,
        prompts: list[list[int]],
        whisper_options: FasterWhisperOptions,
        max_length: int,
    ) -> list[WhisperGenerationResult]:
        results: list[WhisperGenerationResult] = self.model.model.generate(
            encoder_output,
            prompts,
            beam_size=whisper_options.beam_size,
            patience=whisper_options.patience,
            length_penalty=whisper_options.length_penalty,
            max_length=max_length,
            suppress_blank=whisper_options.suppress_blank,
            suppress_tokens=whisper_options.suppress_tokens,
            return_scores=True,
            return_no_speech_prob=True,
            sampling_temperature=whisper_options.temperatures[0],
            repetition_penalty=whisper_options.repetition_penalty,
            no_repeat_ngram_size=whisper_options.no_repeat_ngram_size,
        )
        return results

    def _features(self, chunk: np.ndarray, frames: int | None) -> np.ndarray:
        if frames is None:
            whole: np.ndarray = pad_or_trim(self.model.feature_extractor(chunk)[..., :-1])
            return whole
        padded = np.pad(chunk, (0, max(0, frames * self.model.feature_extractor.hop_length - len(chunk))))
        features: np.ndarray = self.model.feature_extractor(padded)[..., :frames]
        return features

    def _segments_from_words(
        self, transcript: ChunkTranscript, tokenizer: Tokenizer, options: ChunkOptions
    ) -> ChunkTranscript:
        """A chunk decoded as text only (one segment) cut into segments timed by its aligned words."""
        if not transcript.words:  # nothing aligned: the chunk's one segment stays as it is
            return transcript
        (whole,) = transcript.segments
        text_language = "en" if options.task == "translate" else transcript.language
        groups = segment_groups(transcript.words, text_language, self.config.segment_pause_s, self.config.max_segment_s)
        segments = []
        for index, words in enumerate(groups):
            text = "".join(word.word for word in words)
            segments.append(
                whole.model_copy(
                    update={
                        "id": index,
                        "start": words[0].start,
                        "end": words[-1].end,
                        "text": text,
                        "tokens": tokenizer.encode(text),
                        "compression_ratio": get_compression_ratio(text),
                    }
                )
            )
        words = transcript.words if options.word_timestamps else []
        return transcript.model_copy(update={"segments": segments, "words": words})

    def _segments(
        self,
        tokenizer: Tokenizer,
        result: WhisperGenerationResult,
        duration: float,
        size: int,
        length_penalty: float,
    ) -> list[dict[str, Any]]:
        """One chunk's tokens split into segments at its timestamp tokens (one segment without them)."""
        tokens = result.sequences_ids[0]
        avg_logprob = result.scores[0] * (len(tokens) ** length_penalty) / (len(tokens) + 1)
        subsegments, _, _ = self.model._split_segments_by_timestamps(
            tokenizer=tokenizer, tokens=tokens, time_offset=0.0, segment_size=size, segment_duration=duration, seek=0
        )
        return [
            {
                "text": tokenizer.decode(sub["tokens"]),
                "avg_logprob": avg_logprob,
                "no_speech_prob": result.no_speech_prob,
                "tokens": sub["tokens"],
                "start": sub["start"],
                "end": sub["end"],
                "compression_ratio": get_compression_ratio(tokenizer.decode(sub["tokens"])),
                "seek": 0,
            }
            for sub in subsegments
        ]

    def _add_word_timestamps(
        self,
        segmented: list[list[dict[str, Any]]],
        tokenizer: Tokenizer,
        encoded: StorageView | np.ndarray,
        encoder_output: StorageView,
        sizes: list[int],
        whisper_options: FasterWhisperOptions,
    ) -> None:
        """Align the batch's words, `memory.encoder_items` chunks per call as the encoder read them (the
        alignment's decoder pass holds each item's logits over the vocabulary for every token: on a CPU one
        chunk at a time keeps that to one chunk's), then finish each chunk's word times on its own, each
        starting from silence (a chunk starts at the end of a pause)."""
        text_tokens = [
            [token for segment in segments for token in segment["tokens"] if token < tokenizer.eot]
            for segments in segmented
        ]
        if isinstance(encoded, StorageView):
            alignments = self.model.find_alignment(tokenizer, text_tokens, encoded, sizes)
        else:
            alignments = []
            for step in self._encoder_steps(len(encoded)):
                part = StorageView.from_array(np.ascontiguousarray(encoded[step]))
                alignments += self.model.find_alignment(tokenizer, text_tokens[step], part, sizes[step])
        for segments, alignment, size in zip(segmented, alignments, sizes, strict=True):
            if not segments:
                continue
            WhisperModel.add_word_timestamps(
                OneItemAlignment(alignment, self.model.frames_per_second),
                [segments],
                tokenizer,
                encoder_output,
                [size],
                whisper_options.prepend_punctuations,
                whisper_options.append_punctuations,
                0.0,
            )

    def _options(
        self, tokenizer: Tokenizer, options: ChunkOptions, timed_by_alignment: bool = False
    ) -> FasterWhisperOptions:
        """faster-whisper's batched defaults. Timed by alignment, the text is decoded without timestamp
        tokens and every word is aligned; else timestamp tokens are decoded when segments must be timed."""
        return FasterWhisperOptions(
            beam_size=options.beam_size or self.config.beam_size,
            best_of=5,
            patience=1,
            length_penalty=1,
            repetition_penalty=1,
            no_repeat_ngram_size=0,
            log_prob_threshold=-1.0,
            no_speech_threshold=0.6,
            compression_ratio_threshold=COMPRESSION_RATIO_THRESHOLD,
            condition_on_previous_text=False,
            prompt_reset_on_temperature=0.5,
            temperatures=[options.temperature],
            initial_prompt=options.prompt,
            prefix=None,
            suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
            without_timestamps=timed_by_alignment or not options.segment_timestamps,
            max_initial_timestamp=0.0,
            word_timestamps=timed_by_alignment or options.word_timestamps,
            prepend_punctuations="\"'“¿([{-",
            append_punctuations="\"'.。,，!！?？:：”)]}、",  # noqa: RUF001  # CJK punctuation, as faster-whisper's
            multilingual=False,  # detection happens in transcribe_batch, once
            max_new_tokens=None,
            clip_timestamps="0",
            hallucination_silence_threshold=None,
            hotwords=None,
        )


def _short_window_tokens(chunks: list[np.ndarray]) -> int:
    """The most tokens a short window's decode may write: a loop stops here instead of at 448 tokens."""
    longest_s = max(len(chunk) for chunk in chunks) / SAMPLE_RATE
    return int(MAX_TOKENS_PER_S * longest_s) + 16
