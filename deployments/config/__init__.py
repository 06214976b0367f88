"""The settings of the workers and actors: typed, validated once at deploy time, passed in by the
application builder (`serve_app.app:build_app`). Nothing here reads the environment, but for two secrets:
`StorageConfig.database_target` reads the database's password, in the process that opens the database, and
`RedactionConfig.hash_key` the key of hashed redactions, in the process that hashes.

Each owner gets its own object, from its own module here: the Transcriber a `WhisperModelConfig` (and
`BatchingConfig` as its `user_config`: `transcriber`), the pipeline a `ChunkingConfig`, `LimitsConfig`,
`UrlInputConfig` and `VocabularyConfig` (`pipeline`), the Diarizer a `DiarizationConfig` (`diarization`), the
job tracker, ledger and rate limiter a `JobsConfig` (`jobs`) and all of them a `StorageConfig` (`storage`),
the LiveTranscriber a `LiveConfig` (`live`), the Analyzer an `AnalysisConfig` (`analysis`), the callback sender
a `CallbacksConfig` (`callbacks`), the voice store and enrolment a `VoicesConfig` (`voices`), the pipeline and
the LiveTranscriber a `RedactionConfig` (`redaction`). Import them from here:
`from deployments.config import LiveConfig`.
"""

from deployments.config.analysis import AnalysisConfig
from deployments.config.base import Networks, StrictModel
from deployments.config.callbacks import CallbacksConfig
from deployments.config.diarization import DiarizationConfig, ResegmentationConfig
from deployments.config.jobs import JobsConfig
from deployments.config.live import FinalPassWindow, LiveConfig
from deployments.config.pipeline import (
    ChunkingConfig,
    LimitsConfig,
    PipelineConfig,
    UrlInputConfig,
    VocabularyConfig,
)
from deployments.config.redaction import RedactionConfig
from deployments.config.storage import StorageConfig
from deployments.config.transcriber import MAX_LANE_BATCHES, BatchingConfig, WhisperModelConfig
from deployments.config.voices import VoicesConfig

__all__ = [
    "MAX_LANE_BATCHES",
    "AnalysisConfig",
    "BatchingConfig",
    "CallbacksConfig",
    "ChunkingConfig",
    "DiarizationConfig",
    "FinalPassWindow",
    "JobsConfig",
    "LimitsConfig",
    "LiveConfig",
    "Networks",
    "PipelineConfig",
    "RedactionConfig",
    "ResegmentationConfig",
    "StorageConfig",
    "StrictModel",
    "UrlInputConfig",
    "VocabularyConfig",
    "VoicesConfig",
    "WhisperModelConfig",
]
