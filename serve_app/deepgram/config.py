"""The Deepgram protocol's settings (`deepgram:` in the Serve config, named by its Edge): which of Deepgram's
model names the service answers to. Every one is served by the configured Whisper engine."""

from pydantic import Field

from deployments.config import StrictModel
from serve_app.config import Section

DEEPGRAM_MODELS = [
    "nova-3",
    "nova-3-general",
    "nova-2",
    "nova-2-general",
    "nova-2-meeting",
    "nova-2-phonecall",
    "nova-2-video",
    "nova",
    "nova-general",
    "nova-phonecall",
    "enhanced",
    "enhanced-general",
    "enhanced-meeting",
    "enhanced-phonecall",
    "base",
    "base-general",
    "base-meeting",
    "base-phonecall",
    "whisper",
    "whisper-tiny",
    "whisper-base",
    "whisper-small",
    "whisper-medium",
    "whisper-large",
]


class DeepgramConfig(StrictModel):
    models: list[str] = Field(
        default=DEEPGRAM_MODELS,
        min_length=1,
        description="Deepgram model names `/v1/listen` accepts in `model` (all served by the one Whisper engine);"
        " any other name is a 400 in Deepgram's error shape. The first is used when a request names none.",
    )


DEEPGRAM = Section("deepgram", DeepgramConfig, "The Deepgram protocol (`/v1/listen`): the model names it answers to.")
