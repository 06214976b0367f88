"""Typed FastAPI dependencies: what a route needs, as `Annotated` aliases, instead of reads of `app.state`.

    async def route(key: FundedKey, config: ConfigDependency, pipeline: PipelineDependency) -> ...

The app keeps its one `Services` on `app.state.services` (`create_app`); everything else is read from it
here. The checks that guard routes (`require_api_key`, `require_funds`) are dependencies too, and are cached
per request, so a route that names `CurrentKey` under a router that requires a key checks it once.
"""

from typing import Annotated, Any

from fastapi import Depends
from ray.actor import ActorProxy
from ray.serve.handle import DeploymentHandle
from starlette.requests import HTTPConnection

from deployments.billing import pricing
from deployments.billing.pricing import Price
from serve_app.common.auth import AUTH_ERRORS, ApiKey, authenticate, raise_if_exhausted
from serve_app.common.services import Services
from serve_app.config import AppConfig


def get_services(connection: HTTPConnection) -> Services:
    services: Services = connection.app.state.services
    return services


ServicesDependency = Annotated[Services, Depends(get_services)]


def get_config(services: ServicesDependency) -> AppConfig:
    return services.config


def get_pipeline(services: ServicesDependency) -> DeploymentHandle[Any]:
    return services.pipeline


def get_tracker(services: ServicesDependency) -> ActorProxy[Any]:
    return services.tracker


def get_ledger(services: ServicesDependency) -> ActorProxy[Any]:
    return services.ledger


ConfigDependency = Annotated[AppConfig, Depends(get_config)]
PipelineDependency = Annotated[DeploymentHandle[Any], Depends(get_pipeline)]
TrackerDependency = Annotated[ActorProxy[Any], Depends(get_tracker)]
LedgerDependency = Annotated[ActorProxy[Any], Depends(get_ledger)]


async def require_api_key(connection: HTTPConnection, services: ServicesDependency) -> ApiKey:
    """The caller's key, or 401; then one request off its rate, or 429 (see `auth.authenticate`). Also
    called by the WebSocket route before the upgrade, with the WebSocket as the connection."""
    default_rate = services.config.limits.requests_per_second
    return await authenticate(
        connection, services.api_keys, services.rate_limiter, default_rate, services.request_leases
    )


CurrentKey = Annotated[ApiKey, Depends(require_api_key)]
API_KEY_REQUIRED: dict[str, Any] = {"dependencies": [Depends(require_api_key)], "responses": AUTH_ERRORS}
"""`include_router(router, **API_KEY_REQUIRED)`: every route of `router` behind the key, its 401 and 429
documented."""


def price_of(key: ApiKey, config: AppConfig) -> Price:
    """The key's price, with the app's billing defaults filled in."""
    return Price.of(key, config.billing)


def get_price(key: CurrentKey, config: ConfigDependency) -> Price:
    return price_of(key, config)


KeyPrice = Annotated[Price, Depends(get_price)]


async def require_funds(key: CurrentKey, price: KeyPrice, ledger: LedgerDependency) -> ApiKey:
    """The caller's key, or 402 when its balance is spent."""
    raise_if_exhausted(await pricing.funds(ledger, key.owner, price))
    return key


FundedKey = Annotated[ApiKey, Depends(require_funds)]
