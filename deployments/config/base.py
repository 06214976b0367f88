"""What every settings model shares: unknown keys are errors, and CIDR lists are checked when read."""

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


def _networks(networks: list[str]) -> list[str]:
    for network in networks:
        ipaddress.ip_network(network, strict=False)  # raises ValueError, which fails the deploy
    return networks


Networks = Annotated[list[str], AfterValidator(_networks)]
"""CIDRs, each checked when the config is read."""


class StrictModel(BaseModel):
    """Unknown keys are errors, so a typo in a config file fails the deploy instead of being ignored."""

    model_config = ConfigDict(extra="forbid")
