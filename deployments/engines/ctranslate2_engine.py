"""Whisper on CTranslate2 through faster-whisper: int8 on CPU, float16 on GPU.

Batches go through faster-whisper's `BatchedInferencePipeline.forward` (one encoder pass and one beam
search for the whole batch), so segment splitting and word alignment are faster-whisper's own.
"""

import numpy as np
from faster_whisper import BatchedInferencePipeline, WhisperModel
from faster_whisper.audio import pad_or_trim
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import TranscriptionOptions as FasterWhisperOptions
from faster_whisper.transcribe import get_suppressed_tokens

from deployments.model_store import resolve_ctranslate2_model
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Segment, Word
from serve_app.config import WhisperModelConfig


class _LanguageReportingPipeline(BatchedInferencePipeline):
    """faster-whisper's batched pipeline, keeping the languages it detects per item (`multilingual`), which
    it uses for the prompts but does not return. Detection on an encoder output is one decoder step."""

    def __init__(self, model: WhisperModel) -> None:
        super().__init__(model)
        self.detected: list[str] = []

    def generate_segment_batched(self, features, tokenizer, options):  # noqa: ANN001, ANN201 (faster-whisper's)
        encoder_output, output = super().generate_segment_batched(features, tokenizer, options)
        if options.multilingual:
            found = self.model.model.detect_language(encoder_output)
            self.detected = [languages[0][0].strip("<|>") for languages in found]
        return encoder_output, output


class CTranslate2Engine:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.config = config
        self.model = WhisperModel(
            resolve_ctranslate2_model(config.model),
            device=config.device,
            compute_type=config.compute_type,
            cpu_threads=config.cpu_threads,
            local_files_only=config.model.startswith("embedded:"),
        )
        self.batched = _LanguageReportingPipeline(self.model)

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        multilingual = self.model.model.is_multilingual
        detect = multilingual and options.language is None
        language = options.language or "en"  # with `detect`, only a placeholder in the prompt
        tokenizer = Tokenizer(self.model.hf_tokenizer, multilingual, task="transcribe", language=language)
        features = np.stack([pad_or_trim(self.model.feature_extractor(chunk)[..., :-1]) for chunk in chunks])
        metadata = [{"offset": 0.0, "duration": len(chunk) / SAMPLE_RATE, "segments": []} for chunk in chunks]
        self.batched.last_speech_timestamp = 0.0
        outputs = self.batched.forward(features, tokenizer, metadata, self._options(tokenizer, options, detect))
        languages = self.batched.detected if detect else [language] * len(chunks)
        return [
            self._chunk_transcript(segments, chunk_language, options.temperature)
            for segments, chunk_language in zip(outputs, languages, strict=True)
        ]

    def _options(self, tokenizer: Tokenizer, options: ChunkOptions, detect: bool) -> FasterWhisperOptions:
        """faster-whisper's batched defaults; timestamps, when asked for, keep segments sentence-sized."""
        return FasterWhisperOptions(
            beam_size=self.config.beam_size,
            best_of=5,
            patience=1,
            length_penalty=1,
            repetition_penalty=1,
            no_repeat_ngram_size=0,
            log_prob_threshold=-1.0,
            no_speech_threshold=0.6,
            compression_ratio_threshold=2.4,
            condition_on_previous_text=False,
            prompt_reset_on_temperature=0.5,
            temperatures=[options.temperature],
            initial_prompt=options.prompt,
            prefix=None,
            suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
            without_timestamps=not options.segment_timestamps,
            max_initial_timestamp=0.0,
            word_timestamps=options.word_timestamps,
            prepend_punctuations="\"'“¿([{-",
            append_punctuations="\"'.。,，!！?？:：”)]}、",
            multilingual=detect,  # detect each item's language from its encoder output
            max_new_tokens=None,
            clip_timestamps="0",
            hallucination_silence_threshold=None,
            hotwords=None,
        )

    @staticmethod
    def _chunk_transcript(segments: list[dict], language: str, temperature: float) -> ChunkTranscript:
        out = ChunkTranscript(language=language, segments=[])
        for index, segment in enumerate(segments):
            out.segments.append(
                Segment(
                    id=index,
                    seek=0,
                    start=round(float(segment["start"]), 3),
                    end=round(float(segment["end"]), 3),
                    text=segment["text"],
                    tokens=list(segment["tokens"]),
                    temperature=temperature,
                    avg_logprob=float(segment["avg_logprob"]),
                    compression_ratio=float(segment["compression_ratio"]),
                    no_speech_prob=float(segment["no_speech_prob"]),
                )
            )
            out.words.extend(
                Word(
                    word=word["word"],
                    start=round(float(word["start"]), 3),
                    end=round(float(word["end"]), 3),
                    prob=float(word["probability"]),
                )
                for word in segment.get("words") or ()
            )
        return out
