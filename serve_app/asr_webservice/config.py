"""The operator's settings of the whisper-asr-webservice routes (`asr_webservice:` in the Serve config, named
by its Edge)."""

import ipaddress

from pydantic import Field

from deployments.config import Networks, StrictModel
from serve_app.config import Section


class AsrWebserviceConfig(StrictModel):
    """whisper-asr-webservice's `/asr` and `/detect-language`, for tools that send no key. Off by default:
    enabling them lets anyone in `allowed_networks` transcribe on the key they are charged to."""

    enabled: bool = Field(False, description="Serve `/asr` and `/detect-language`; off: both answer 404.")
    api_key_name: str | None = Field(
        None,
        description="The `name` of the keys-file key (STT_API_KEYS_FILE) the routes are charged to, with its"
        " balance, price and request rate. STT_ASR_WEBSERVICE_KEY (a key itself, from the environment) wins.",
    )
    allowed_networks: Networks = Field(
        default_factory=lambda: ["127.0.0.0/8", "::1/128"],
        description="CIDRs the caller's address must be in (others get 403). Default: loopback only.",
    )
    engine_name: str = Field(
        "faster_whisper", description="The `Asr-Engine` header of `/asr` answers (whisper-asr-webservice's names)."
    )

    def admits(self, address: str | None) -> bool:
        """Whether a caller at `address` may call the routes."""
        if address is None:
            return False
        try:
            caller = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(caller in ipaddress.ip_network(network, strict=False) for network in self.allowed_networks)


ASR_WEBSERVICE = Section(
    "asr_webservice",
    AsrWebserviceConfig,
    "whisper-asr-webservice's `/asr` for subtitle tools that send no key: off unless enabled"
    " (docs/api/asr-webservice.md).",
)
