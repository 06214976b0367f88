"""The Deepgram protocol as the app serves it: its routes (`/v1/listen`, HTTP and WebSocket), its error shape,
its callbacks' format and its settings."""

from fastapi import APIRouter

from serve_app.common.edge import Edge, ErrorShape
from serve_app.deepgram import listen, live
from serve_app.deepgram.config import DEEPGRAM
from serve_app.deepgram.errors import PATHS, error_body

# Deepgram's API, documented by Deepgram (and docs/api/deepgram.md), is not in our OpenAPI document.
router = APIRouter(include_in_schema=False)
router.include_router(listen.router)
router.include_router(live.router)

EDGE = Edge(
    router,
    errors=ErrorShape(PATHS, error_body),
    callbacks=(listen.PROTOCOL, listen.callback_delivery),
    config=DEEPGRAM,
)
