"""Whisper on CTranslate2 through faster-whisper: int8 on CPU, float16 on GPU."""

import numpy as np
from faster_whisper import WhisperModel

from deployments.model_store import resolve_ctranslate2_model
from deployments.types import SAMPLE_RATE, Segment, Transcript, TranscriptionOptions, Word
from serve_app.config import WhisperModelConfig


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

    def transcribe(self, audio: np.ndarray, options: TranscriptionOptions) -> Transcript:
        segments, info = self.model.transcribe(
            audio,
            language=options.language,
            beam_size=self.config.beam_size,
            temperature=options.temperature if options.temperature > 0 else [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            initial_prompt=options.prompt,
            word_timestamps=options.word_timestamps,
            vad_filter=self.config.vad_filter,
        )
        out_segments: list[Segment] = []
        out_words: list[Word] = []
        for segment in segments:  # a generator: decoding happens while we iterate
            out_segments.append(
                Segment(
                    id=segment.id - 1,  # faster-whisper counts from 1, OpenAI from 0
                    seek=segment.seek,
                    start=round(float(segment.start), 3),
                    end=round(float(segment.end), 3),
                    text=segment.text,
                    tokens=list(segment.tokens),
                    temperature=float(segment.temperature),
                    avg_logprob=float(segment.avg_logprob),
                    compression_ratio=float(segment.compression_ratio),
                    no_speech_prob=float(segment.no_speech_prob),
                )
            )
            out_words.extend(
                Word(word=w.word, start=round(float(w.start), 3), end=round(float(w.end), 3), prob=float(w.probability))
                for w in segment.words or ()
            )
        return Transcript(
            language=info.language,
            duration=len(audio) / SAMPLE_RATE,
            segments=out_segments,
            words=out_words,
        )
