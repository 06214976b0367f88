"""The REST API's routes, one module per resource, under one router: every one behind the API key but `/health`."""

from fastapi import APIRouter

from serve_app.common.dependencies import API_KEY_REQUIRED
from serve_app.rest import billing, health, jobs, models, transcriptions, translations

router = APIRouter()
router.include_router(health.router)  # no key: load balancers probe it, and it reveals nothing
for resource in (models, transcriptions, translations, jobs, billing):
    router.include_router(resource.router, **API_KEY_REQUIRED)
