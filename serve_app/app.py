"""The typed application builder behind `serve run configs/local.yaml`.

Serve hands it the YAML's `args`, which it validates against `AppArgs` (`AppConfig` with each protocol's
section: `serve_app.http_app`), then composes the deployments, each with its own settings:

    Ingress -> TranscriptionPipeline -> Transcriber
            |                        -> Diarizer
            |                        -> Analyzer (an LLM: prompt, roles, emotions) [-> LLMServer (ray_llm)]
            |                        -> AudioEmotions (only with analysis.audio_emotion_model: emotions from
            |                                          the audio, instead of the LLM's from the words)
            -> LiveTranscriber   -> Transcriber (the same replicas: live readings and file chunks
                                     -> Diarizer      share batches)
"""

from typing import Any, cast

from ray.serve import Application, Deployment

from deployments.analysis.audio_deployment import AudioEmotions
from deployments.analysis.deployment import Analyzer
from deployments.config import PipelineConfig
from deployments.diarization.deployment import Diarizer
from deployments.files.pipeline import TranscriptionPipeline
from deployments.live.deployment import LiveTranscriber
from deployments.transcriber.deployment import Transcriber
from serve_app.config import AppConfig
from serve_app.http_app import AppArgs
from serve_app.ingress import Ingress


def build_app(raw_args: dict[str, Any]) -> Application:
    """Serve validates a builder's argument itself only against a model named in its signature, which mypy must
    see as a type: `AppArgs` is made at import time from the EDGES, so the builder validates."""
    args = AppArgs.model_validate(raw_args)
    transcriber = _deployment(Transcriber).bind(args.whisper)
    diarizer = _deployment(Diarizer).bind(args.diarization)
    pipeline_config = PipelineConfig(
        chunking=args.chunking,
        limits=args.limits,
        url_input=args.url_input,
        vocabulary=args.vocabulary,
        redaction=args.redaction_config(),
    )
    analyzer = _deployment(Analyzer).bind(args.analysis, _llm_deployment(args))
    audio_emotions = None  # without the setting there is no such deployment, and nothing loads torch for it
    if args.analysis.audio_emotion_model is not None:
        audio_emotions = _deployment(AudioEmotions).bind(args.analysis.audio_emotion_model)
    pipeline = _deployment(TranscriptionPipeline).bind(transcriber, diarizer, pipeline_config, analyzer, audio_emotions)
    live = _deployment(LiveTranscriber).bind(
        transcriber, diarizer, args.live, args.vocabulary, args.storage, args.redaction_config()
    )
    return _deployment(Ingress).bind(pipeline, live, args)


def _llm_deployment(args: AppConfig) -> Application | None:
    """The Ray Serve LLM (vLLM) deployment the Analyzer calls, for backend `ray_llm`; None for the others.
    `ray.serve.llm` needs `ray[llm]`, so it is imported only here."""
    if args.analysis.backend != "ray_llm":
        return None
    from ray.serve.llm import LLMConfig, build_llm_deployment

    return build_llm_deployment(LLMConfig(**(args.analysis.ray_llm or {})))


def _deployment(decorated: type) -> Deployment:
    """What `@serve.deployment` made of a class: mypy keeps a decorated class's own type, as class decorators
    cannot change it for type checkers."""
    return cast(Deployment, decorated)
