"""The FastAPI application: the plumbing every client protocol shares (the services, auth's error answers,
request metrics, the `/api/v1` alias, error handling) around the protocols' routers. No model code; the handles
come in as `Services`."""

from collections.abc import Iterable

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from serve_app.common.edge import Edge
from serve_app.common.errors import add_exception_handlers
from serve_app.common.request_metrics import RequestMetrics
from serve_app.common.services import Services


def create_app(services: Services, edges: Iterable[Edge]) -> FastAPI:
    """The app over `services`, serving each protocol's router (with its own auth) and answering errors on its
    paths in its shape; routes reach the services' parts through `serve_app.common.dependencies`."""
    app = FastAPI(
        title="stt-service",
        summary="OpenAI-compatible speech-to-text on Ray Serve.",
        version="0.1.0",
    )
    app.state.services = services
    edges = list(edges)
    for edge in edges:
        app.include_router(edge.router)
    app.state.error_shapes = [edge.errors for edge in edges if edge.errors is not None]
    app.add_middleware(RequestMetrics)  # inside ApiV1Alias: it sees the route that answered
    app.add_middleware(ApiV1Alias)
    add_exception_handlers(app)
    return app


class ApiV1Alias:
    """`/api/v1/...` is served as `/v1/...`: the nexara API documents both prefixes."""

    PREFIX = "/api"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(self.PREFIX + "/v1/"):
            scope = {**scope, "path": scope["path"][len(self.PREFIX) :]}
            if "raw_path" in scope and scope["raw_path"] is not None:
                scope["raw_path"] = scope["raw_path"][len(self.PREFIX) :]
        await self.app(scope, receive, send)
