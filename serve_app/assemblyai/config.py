"""The AssemblyAI protocol's settings (`assemblyai:` in the Serve config, named by its Edge): which of
AssemblyAI's model names this service answers, and with what, and how long an upload waits for its transcript."""

from pydantic import Field

from deployments.config import StrictModel
from serve_app.config import Section

ASSEMBLYAI_SPEECH_MODELS = ("best", "universal", "slam-1", "nano")
"""The `speech_model` values the `assemblyai` SDK's `SpeechModel` enum sends."""
LEMUR_MODELS = (
    "default",
    "basic",
    "assemblyai/mistral-7b",
    "anthropic/claude-3-5-sonnet",
    "anthropic/claude-3-7-sonnet-20250219",
    "anthropic/claude-sonnet-4-20250514",
    "anthropic/claude-opus-4-20250514",
    "anthropic/claude-3-opus",
    "anthropic/claude-3-haiku",
    "anthropic/claude-3-5-haiku-20241022",
    "anthropic/claude-3-sonnet",
)
"""LeMUR's `final_model` names (its documentation's, past and present)."""


class AssemblyAIConfig(StrictModel):
    """AssemblyAI's API (`/v2/...`, `/lemur/v3/...`): its names mapped onto this service's models."""

    speech_models: dict[str, str] = Field(
        default_factory=lambda: dict.fromkeys(ASSEMBLYAI_SPEECH_MODELS, "whisper-1"),
        description="AssemblyAI `speech_model` name -> the id of `model_ids` that serves and bills it (all run on"
        " the one Whisper engine). A name not here is a 400; a transcript without one is billed as `default_model`.",
    )
    default_model: str = Field(
        "whisper-1", description="The id of `model_ids` a transcript that names no `speech_model` is billed as."
    )
    lemur_models: list[str] = Field(
        default_factory=lambda: list(LEMUR_MODELS),
        description="LeMUR `final_model` names accepted; each is answered by the configured LLM (`analysis`).",
    )
    upload_ttl_s: float = Field(
        3600,
        gt=0,
        description="How long a file of `POST /v2/upload` waits for the transcript that uses it (which takes it as"
        " its job's input, removed with the job); after that it is deleted and its upload_url is a 400.",
    )


ASSEMBLYAI = Section(
    "assemblyai", AssemblyAIConfig, "AssemblyAI's API: its model names and uploads (docs/api/assemblyai.md)."
)
