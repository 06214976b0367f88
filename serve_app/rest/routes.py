"""The REST API's routes, one module per resource, under one router: every one behind the API key but `/health`."""

from typing import Any

from fastapi import APIRouter, Depends

from serve_app.common.auth import AUTH_ERRORS
from serve_app.common.dependencies import require_api_key
from serve_app.rest import billing, health, jobs, models, transcriptions, translations

router = APIRouter()
router.include_router(health.router)  # no key: load balancers probe it, and it reveals nothing
authenticated: dict[str, Any] = {"dependencies": [Depends(require_api_key)], "responses": AUTH_ERRORS}
for resource in (models, transcriptions, translations, jobs, billing):
    router.include_router(resource.router, **authenticated)
