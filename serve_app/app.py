"""The typed application builder behind `serve run configs/local.yaml`.

Serve validates the YAML's `args` against `AppConfig`, then this composes the deployments, each with its
own settings:

    Ingress -> TranscriptionPipeline -> Transcriber
            |                        -> Diarizer
            -> LiveTranscriber   -> Transcriber (the same replicas: live readings and file chunks
                                     -> Diarizer      share batches)
"""

from ray.serve import Application

from deployments.config import PipelineConfig
from deployments.diarization.deployment import Diarizer
from deployments.files.pipeline import TranscriptionPipeline
from deployments.live.deployment import LiveTranscriber
from deployments.transcriber.deployment import Transcriber
from serve_app.config import AppConfig
from serve_app.ingress import Ingress


def build_app(args: AppConfig) -> Application:
    transcriber = Transcriber.bind(args.whisper)
    diarizer = Diarizer.bind(args.diarization)
    pipeline_config = PipelineConfig(chunking=args.chunking, limits=args.limits, url_input=args.url_input)
    pipeline = TranscriptionPipeline.bind(transcriber, diarizer, pipeline_config)
    live = LiveTranscriber.bind(transcriber, diarizer, args.live)
    return Ingress.bind(pipeline, live, args)
