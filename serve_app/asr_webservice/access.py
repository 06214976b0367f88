"""Who may call the whisper-asr-webservice routes and what they are charged to. Their callers send no key,
so the routes are off (404, as an unknown route) unless enabled, refused (403) to addresses outside
`allowed_networks`, and charged to the operator's key: STT_ASR_WEBSERVICE_KEY, else the keys-file key named
`api_key_name`, with that key's request rate (429) and balance (402), as if its holder had called."""

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from deployments.billing import pricing
from serve_app.asr_webservice.config import ASR_WEBSERVICE
from serve_app.common.auth import ApiKey, raise_if_exhausted, take_request
from serve_app.common.dependencies import ServicesDependency
from serve_app.common.services import Services


async def charged_key(request: Request, services: ServicesDependency) -> ApiKey:
    """The key this request is charged to, after the checks above, in that order."""
    settings = ASR_WEBSERVICE.of(services.config)
    if not settings.enabled:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "Not Found")  # as Starlette answers an unknown route
    caller = request.client.host if request.client is not None else None
    if not settings.admits(caller):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this address may not call the whisper-asr-webservice routes")
    key = await _configured_key(services)
    if key is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "the whisper-asr-webservice routes are enabled without a key to charge: set STT_ASR_WEBSERVICE_KEY or"
            " asr_webservice.api_key_name (a keys-file key's name)",
        )
    await take_request(key, services.rate_limiter, services.config.limits.requests_per_second, services.request_leases)
    raise_if_exhausted(await pricing.funds(services.ledger, key.owner, pricing.Price.of(key, services.config.billing)))
    return key


async def _configured_key(services: Services) -> ApiKey | None:
    """STT_ASR_WEBSERVICE_KEY (any valid key, the key store's too), else the static key named `api_key_name`."""
    if services.asr_webservice_key is not None:
        return await services.api_keys.find(services.asr_webservice_key.get_secret_value())
    name = ASR_WEBSERVICE.of(services.config).api_key_name
    return next((key for key in services.api_keys.static if name is not None and key.name == name), None)


ChargedKey = Annotated[ApiKey, Depends(charged_key)]
