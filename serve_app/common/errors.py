"""How the edge answers a failure: the exception handlers every protocol's HTTP routes share, and the error
bodies (and documented error responses) of the OpenAPI document."""

import logging
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from deployments.analysis.errors import AnalysisError, AnalysisTimeout, analysis_error_message, analysis_failure
from deployments.errors import STORAGE_FULL, InputRejectedError, client_error, storage_failure
from deployments.retry import WORKER_LOSS, worker_lost

logger = logging.getLogger(__name__)


class ErrorResponse(BaseModel):
    detail: str


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorResponse(BaseModel):
    detail: list[ValidationIssue]


UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "The form or the audio cannot be processed."},
    413: {"model": ErrorResponse, "description": "The file or a form field is too large."},
    415: {"model": ErrorResponse, "description": "The body is not a form."},
    422: {"model": ValidationErrorResponse, "description": "A form field is invalid."},
}
ANALYSIS_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {
        "model": ErrorResponse,
        "description": "The file or a form field is too large; or the LLM analysis did not finish within the"
        " synchronous budget (resubmit the request as a job).",
    },
    502: {"model": ErrorResponse, "description": "The LLM backend failed, or its answer never met the json_schema."},
}


def add_exception_handlers(app: FastAPI) -> None:
    # Starlette types every handler as taking Exception; it calls each with the type it is registered for.
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(InputRejectedError, _input_rejected)  # type: ignore[arg-type]
    app.add_exception_handler(AnalysisError, _analysis_failed)  # type: ignore[arg-type]
    app.add_exception_handler(OSError, _storage_failed)  # type: ignore[arg-type]
    for lost in WORKER_LOSS:
        app.add_exception_handler(lost, _worker_lost)
    app.add_exception_handler(Exception, _unexpected_error)


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
