"""The application's configuration, from two sources, on purpose:
- `AppConfig` comes from the Serve config YAML (`applications[].args`) and holds everything that is not
  secret. Serve validates it against this model at deploy time; its parts are the workers' own settings
  (`deployments/config.py`, and billing's default price in `deployments/billing/pricing.py`), handed to
  each owner by the application builder.
- `SecretSettings` comes from the environment (`STT_API_KEYS`, `STT_ADMIN_KEYS`), so keys never sit in a
  file that is committed or shown by `serve status`. The Ingress reads it once, when it starts.
"""

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from deployments.billing.pricing import BillingConfig
from deployments.config import (
    AnalysisConfig,
    CallbacksConfig,
    ChunkingConfig,
    DiarizationConfig,
    JobsConfig,
    LimitsConfig,
    LiveConfig,
    StorageConfig,
    StrictModel,
    UrlInputConfig,
    VocabularyConfig,
    WhisperModelConfig,
)
from serve_app.asr_webservice.config import AsrWebserviceConfig
from serve_app.assemblyai.config import AssemblyAIConfig
from serve_app.deepgram.config import DeepgramConfig

OPENAI_TRANSCRIBE_MODELS = ("gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe-diarize")
"""OpenAI's current transcription model ids, which its SDK's examples send (diarized_json with the last)."""


class AppConfig(StrictModel):
    """Arguments of the Serve application builder (`serve_app.app:build_app`)."""

    model_ids: list[str] = Field(
        default=["whisper-1", *OPENAI_TRANSCRIBE_MODELS],
        min_length=1,
        description="The ids `model` accepts and /v1/models lists, all served by the one Whisper engine"
        " (aliases: e.g. whisper-1 and OpenAI's gpt-4o ids for OpenAI clients, and a name of your own). `emotions`"
        " needs `nexara-ru` here.",
    )
    billing: BillingConfig = BillingConfig()
    whisper: WhisperModelConfig = WhisperModelConfig()
    chunking: ChunkingConfig = ChunkingConfig()
    limits: LimitsConfig = LimitsConfig()
    url_input: UrlInputConfig = UrlInputConfig()
    storage: StorageConfig = StorageConfig()
    jobs: JobsConfig = JobsConfig()
    diarization: DiarizationConfig = DiarizationConfig()
    live: LiveConfig = LiveConfig()
    analysis: AnalysisConfig = AnalysisConfig()
    callbacks: CallbacksConfig = CallbacksConfig()
    asr_webservice: AsrWebserviceConfig = Field(
        AsrWebserviceConfig(),
        description="whisper-asr-webservice's `/asr` for subtitle tools that send no key: off unless enabled"
        " (docs/api/asr-webservice.md).",
    )
    assemblyai: AssemblyAIConfig = Field(
        AssemblyAIConfig(), description="AssemblyAI's API: its model names and uploads (docs/api/assemblyai.md)."
    )
    vocabulary: VocabularyConfig = Field(
        VocabularyConfig(),
        description="Domain vocabulary (`hotwords`, `dictionary`): operators' dictionaries, the terms' share of"
        " Whisper's prompt and the correction's threshold (docs/vocabulary.md).",
    )
    deepgram: DeepgramConfig = Field(
        DeepgramConfig(), description="The Deepgram protocol (`/v1/listen`): the model names it answers to."
    )


class SecretSettings(BaseSettings):
    """Secrets read from the environment of each replica."""

    model_config = SettingsConfigDict(env_prefix="STT_")

    api_keys: str = Field("", description="Comma-separated bearer API keys without a balance (STT_API_KEYS).")
    api_keys_file: str = Field(
        "", description="A JSON or YAML keys file with names, balances and per-key limits (STT_API_KEYS_FILE)."
    )

    admin_keys: str = Field(
        "",
        description="Comma-separated admin keys (STT_ADMIN_KEYS): they manage API keys at /v1/admin/ and cannot"
        " transcribe. None: the admin API answers 401.",
    )
    callback_secret: SecretStr | None = Field(
        None,
        description="Signs job callbacks of keys without a callback_secret of their own (STT_CALLBACK_SECRET);"
        " with neither, `callback_url` is refused.",
    )

    asr_webservice_key: SecretStr | None = Field(
        None,
        description="The key the whisper-asr-webservice routes (`/asr`, `/detect-language`) are charged to"
        " (STT_ASR_WEBSERVICE_KEY); its callers send none. Wins over asr_webservice.api_key_name.",
    )

    def api_key_list(self) -> list[str]:
        return [key.strip() for key in self.api_keys.split(",") if key.strip()]

    def admin_key_list(self) -> list[str]:
        return [key.strip() for key in self.admin_keys.split(",") if key.strip()]
