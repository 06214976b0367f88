"""The typed application builder behind `serve run configs/local.yaml`.

Serve validates the YAML's `args` against `AppConfig`, then this composes the deployments:
Ingress -> (AudioDecoder, Transcriber).
"""

from ray.serve import Application

from deployments.audio_decoder import AudioDecoder
from deployments.transcriber import Transcriber
from serve_app.config import AppConfig
from serve_app.ingress import Ingress


def build_app(args: AppConfig) -> Application:
    decoder = AudioDecoder.bind(args.chunking)
    transcriber = Transcriber.bind(args.whisper)
    return Ingress.bind(decoder, transcriber, args)
