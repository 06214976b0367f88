"""The application's configuration, from two sources, on purpose:
- `AppConfig` comes from the Serve config YAML (`applications[].args`) and holds everything that is not
  secret. Its parts are the workers' own settings (`deployments/config/`, and billing's default price in
  `deployments/billing/pricing.py`), handed to each owner by the application builder, and one section per
  client protocol that has settings, kept beside that protocol (`serve_app/<protocol>/config.py`: a `Section`)
  and named by its `Edge`. `AppConfig` itself names no protocol: `serve_app.http_app.AppArgs` is `AppConfig`
  with the sections of the `EDGES` (`AppConfig.with_sections`), and the application builder validates the
  YAML's `args` against it at deploy time. A protocol reads its own section, typed, with `Section.of`.
- `SecretSettings` comes from the environment (`STT_API_KEYS`, `STT_ADMIN_KEYS`), so keys never sit in a
  file that is committed or shown by `serve status`. The Ingress reads it once, when it starts.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, SecretStr, create_model
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
    RedactionConfig,
    StorageConfig,
    StrictModel,
    UrlInputConfig,
    VocabularyConfig,
    VoicesConfig,
    WhisperModelConfig,
)

SectionModel = TypeVar("SectionModel", bound=BaseModel, covariant=True)


@dataclass(frozen=True)
class Section(Generic[SectionModel]):
    """A client protocol's settings: the section `name` of the Serve config's `args`, validated by `model` (whose
    fields all have defaults: a config without the section gets them). The protocol's `Edge` names it, which is
    all that puts the section into the application's configuration (`AppConfig.with_sections`) and into the
    generated configuration reference (its fields' `Field(description=...)` and the model's docstring)."""

    name: str
    model: type[SectionModel]
    description: str
    """The section field's description (in the configuration's JSON schema)."""

    def of(self, config: "AppConfig") -> SectionModel:
        """This section of the application's configuration, typed: e.g. `DEEPGRAM.of(config).models`."""
        section = getattr(config, self.name, None)
        return section if isinstance(section, self.model) else self.model()


OPENAI_TRANSCRIBE_MODELS = ("gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe-diarize")
"""OpenAI's current transcription model ids, which its SDK's examples send (diarized_json with the last)."""


class AppConfig(StrictModel):
    """Arguments of the Serve application builder (`serve_app.app:build_app`): the service's own. Each client
    protocol's section is added by `with_sections`, from the protocol's `Edge` (`serve_app.http_app.AppArgs`)."""

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
    voices: VoicesConfig = VoicesConfig()
    redaction: RedactionConfig = Field(
        RedactionConfig(),
        description="`redact` (docs/redaction.md): the key of `redact_mode=hash`, from the environment or a file.",
    )
    vocabulary: VocabularyConfig = Field(
        VocabularyConfig(),
        description="Domain vocabulary (`hotwords`, `dictionary`): operators' dictionaries, the terms' share of"
        " Whisper's prompt and the correction's threshold (docs/vocabulary.md).",
    )

    def redaction_config(self) -> RedactionConfig:
        """`redaction`, its key file under storage.state_dir unless one is given."""
        if self.redaction.secret_file is not None:
            return self.redaction
        return self.redaction.model_copy(update={"secret_file": str(self.storage.state_path / "redaction.secret")})

    @classmethod
    def with_sections(cls, name: str, module: str, sections: Iterable[Section[BaseModel]]) -> type["AppConfig"]:
        """This model with one more field per section: named as the section, its defaults when left out. `name`
        and `module` are where the new model is kept (a module attribute of that name, so that Ray pickles the
        configuration it hands the Ingress by reference)."""
        fields: dict[str, Any] = {}
        for section in sections:
            if section.name in cls.model_fields or section.name in fields:
                raise ValueError(f"two settings sections are named {section.name!r}")
            fields[section.name] = (section.model, Field(section.model(), description=section.description))
        return create_model(name, __base__=cls, __module__=module, __doc__=cls.__doc__, **fields)


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
