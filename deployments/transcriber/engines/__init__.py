"""Whisper engines behind one interface; which one serves `whisper-1` is configuration."""

from deployments.config import WhisperModelConfig
from deployments.transcriber.engines.base import WhisperEngine


def load_engine(config: WhisperModelConfig) -> WhisperEngine:
    """Build the engine that `config.engine` names."""
    if config.engine == "ctranslate2":
        from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine

        return CTranslate2Engine(config)
    if config.engine == "transformers":
        from deployments.transcriber.engines.transformers_engine import TransformersEngine

        return TransformersEngine(config)
    raise ValueError(f"unknown Whisper engine {config.engine!r}")
