"""The FastAPI application: routers, auth and error handling. No model code; the handles come in as `Services`."""

import logging
from typing import Any

from fastapi import Depends, FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.analysis.errors import AnalysisError, AnalysisTimeout, analysis_error_message, analysis_failure
from deployments.errors import STORAGE_FULL, InputRejectedError, client_error, storage_failure
from deployments.retry import WORKER_LOSS, worker_lost
from serve_app.auth import AUTH_ERRORS
from serve_app.dependencies import require_api_key
from serve_app.request_metrics import RequestMetrics
from serve_app.routers import billing, health, jobs, live, models, realtime, transcriptions, translations, web
from serve_app.services import Services

logger = logging.getLogger(__name__)


def create_app(services: Services) -> FastAPI:
    """The app over `services`; routes reach its parts through `serve_app.dependencies`."""
    app = FastAPI(
        title="stt-service",
        summary="OpenAI-compatible speech-to-text on Ray Serve.",
        version="0.1.0",
    )
    app.state.services = services
    authenticated: dict[str, Any] = {"dependencies": [Depends(require_api_key)], "responses": AUTH_ERRORS}
    app.include_router(health.router)  # no key: load balancers probe it, and it reveals nothing
    app.include_router(web.router)  # no key: the page asks for one and sends it with its own requests
    app.mount("/web", web.page_files(), name="web")
    app.include_router(models.router, **authenticated)
    app.include_router(transcriptions.router, **authenticated)
    app.include_router(translations.router, **authenticated)
    app.include_router(jobs.router, **authenticated)
    app.include_router(billing.router, **authenticated)
    app.include_router(live.router)  # checks the key itself, before the WebSocket upgrade
    app.include_router(realtime.router)  # checks the key itself, after the upgrade (OpenAI error events)
    app.add_middleware(RequestMetrics)  # inside ApiV1Alias: it sees the route that answered
    app.add_middleware(ApiV1Alias)
    # Starlette types every handler as taking Exception; it calls each with the type it is registered for.
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(InputRejectedError, _input_rejected)  # type: ignore[arg-type]
    app.add_exception_handler(AnalysisError, _analysis_failed)  # type: ignore[arg-type]
    app.add_exception_handler(OSError, _storage_failed)  # type: ignore[arg-type]
    for lost in WORKER_LOSS:
        app.add_exception_handler(lost, _worker_lost)
    app.add_exception_handler(Exception, _unexpected_error)
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


async def _validation_error(_: Request, error: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 array, trimmed to `{loc, msg, type}`: the input is not echoed back."""
    detail = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in error.errors()]
    return JSONResponse({"detail": detail}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _input_rejected(request: Request, error: InputRejectedError) -> JSONResponse:
    """What the pipeline refused (undecodable audio, a bad URL, ...), also when it crossed from a replica."""
    rejected = client_error(error)
    if rejected is None:
        return await _unexpected_error(request, error)
    return JSONResponse({"detail": str(rejected)}, status_code=rejected.status)


async def _analysis_failed(request: Request, error: AnalysisError) -> JSONResponse:
    """The LLM step failed after the transcription: 413 when it ran out of the synchronous budget (nexara's
    answer: resubmit as a job), 502 when the backend failed or its answers never met the schema."""
    failure = analysis_failure(error)
    if failure is None:
        return await _unexpected_error(request, error)
    if isinstance(failure, AnalysisTimeout):
        return JSONResponse({"detail": analysis_error_message(failure)}, status_code=413)
    logger.error("the LLM analysis failed on %s %s: %s", request.method, request.url.path, failure)
    return JSONResponse({"detail": analysis_error_message(failure)}, status_code=status.HTTP_502_BAD_GATEWAY)


STORAGE_RETRY_AFTER_S = 30


async def _storage_failed(request: Request, error: OSError) -> JSONResponse:
    """The service's own disk refused a write (an upload's spool, a job's record, decoded audio): 507 when it
    is full, 503 with Retry-After when it is read-only or failing. Nothing of the request is kept."""
    failure = storage_failure(error)
    if failure is None:
        return await _unexpected_error(request, error)
    logger.error("storage failure on %s %s: %s", request.method, request.url.path, failure)
    if failure.errno in STORAGE_FULL:
        detail = "insufficient storage: the service's disk is full, so this request could not be kept; try again later"
        return JSONResponse({"detail": detail}, status_code=status.HTTP_507_INSUFFICIENT_STORAGE)
    detail = f"storage unavailable: the service's disk refused a write ({failure.strerror}); try again later"
    return JSONResponse(
        {"detail": detail},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(STORAGE_RETRY_AFTER_S)},
    )


WORKER_LOST_RETRY_AFTER_S = 5


async def _worker_lost(request: Request, error: Exception) -> JSONResponse:
    """A replica or actor went away mid-request (a crash, a restart, a redeploy) and the one retry inside the
    service did not help: Ray is replacing it, so the client may send the request again shortly."""
    if not worker_lost(error):
        return await _unexpected_error(request, error)
    logger.warning("a worker was lost during %s %s: %s", request.method, request.url.path, type(error).__name__)
    detail = "service unavailable: the worker handling this request stopped (a restart or redeploy); send it again"
    return JSONResponse(
        {"detail": detail},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(WORKER_LOST_RETRY_AFTER_S)},
    )


async def _unexpected_error(request: Request, error: Exception) -> JSONResponse:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "internal error: the request could not be completed"}, status_code=500)
