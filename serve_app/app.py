"""The typed application builder behind `serve run configs/local.yaml`.

Serve validates the YAML's `args` against `AppConfig`, then this composes the deployments:
Ingress -> (AudioDecoder, Transcriber, Diarizer).
"""

from ray.serve import Application

from deployments.audio_decoder import AudioDecoder
from deployments.diarizer import Diarizer
from deployments.transcriber import Transcriber
from serve_app.config import AppConfig
from serve_app.ingress import Ingress


def build_app(args: AppConfig) -> Application:
    decoder = AudioDecoder.bind(args.chunking)
    transcriber = Transcriber.bind(args.whisper)
    diarizer = Diarizer.bind(args.diarization)
    return Ingress.bind(decoder, transcriber, diarizer, args)
