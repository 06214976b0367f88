"""An `/asr` or `/detect-language` call as the intake (`serve_app.common.intake`) sees any protocol's form."""

from dataclasses import dataclass
from typing import Literal

from deployments.types import AnalysisOptions, DiarizationOptions, TranscriptionOptions


@dataclass(frozen=True)
class AsrRequest:
    model: str
    task: Literal["transcribe", "translate"] = "transcribe"
    language: str | None = None
    initial_prompt: str | None = None
    word_timestamps: bool = False
    diarize: bool = False
    min_speakers: int | None = None
    max_speakers: int | None = None
    url: None = None
    """Always an upload: whisper-asr-webservice takes no URL."""
    filename: str = ""
    """The upload's file name, once received (its output's attachment is named after it)."""

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language, task=self.task, prompt=self.initial_prompt, word_timestamps=self.word_timestamps
        )

    def diarization_options(self) -> DiarizationOptions | None:
        if not self.diarize:
            return None
        return DiarizationOptions(min_speakers=self.min_speakers, max_speakers=self.max_speakers)

    def analysis_options(self) -> AnalysisOptions | None:
        return None
