"""`stt wyoming`'s server: the program Home Assistant sees (`describe`), and a handler per connection."""

import logging
from functools import partial

from wyoming.info import AsrModel, AsrProgram, Attribution, Info
from wyoming.server import AsyncServer

from stt_cli.wyoming.handler import Settings, SttEventHandler, Transport
from stt_cli.wyoming.service import Service

logger = logging.getLogger(__name__)

ATTRIBUTION = Attribution(name="stt-service (Whisper)", url="https://github.com/openai/whisper")


def program_info(base_url: str, models: list[str], languages: list[str], streaming: bool) -> Info:
    """One ASR program, its models the service's (`GET /v1/models`), each taking `languages`."""
    return Info(
        asr=[
            AsrProgram(
                name="stt-service",
                description=f"Speech-to-text by the service at {base_url}",
                attribution=ATTRIBUTION,
                installed=True,
                version=None,
                models=[
                    AsrModel(
                        name=model,
                        description=f"{model} at {base_url}",
                        attribution=ATTRIBUTION,
                        installed=True,
                        version=None,
                        languages=languages,
                    )
                    for model in models
                ],
                supports_transcript_streaming=streaming,
            )
        ]
    )


async def serve(
    uri: str,
    service: Service,
    languages: list[str],
    streaming: bool,
    max_seconds: float,
    models: list[str],
    transport: Transport = "live",
) -> None:
    """Serve Wyoming at `uri` (tcp://host:port, unix://path or stdio://) until stopped."""
    info = program_info(service.base_url, models, languages, streaming)
    settings = Settings(service, info, tuple(models), streaming, max_seconds, transport)
    server = AsyncServer.from_uri(uri)
    logger.info("Wyoming speech-to-text at %s, transcribing with %s (%s)", uri, service.base_url, transport)
    await server.run(partial(SttEventHandler, settings))
