"""How the edge answers a failure: the exception handlers every protocol's HTTP routes share, the refusals more
than one protocol raises alike, and the error bodies (and documented error responses) of the OpenAPI document.
Ours are `{"detail": ...}`; on the paths of a protocol with an error shape of its own
(`serve_app.common.edge.ErrorShape`) the same message takes that shape, so its SDK reports it as it would its own
service's."""

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from deployments.analysis.errors import AnalysisError, AnalysisTimeout, analysis_error_message, analysis_failure
from deployments.errors import STORAGE_FULL, InputRejectedError, client_error, storage_failure
from deployments.retry import WORKER_LOSS, worker_lost
from serve_app.common.edge import ErrorShape

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


def too_many_jobs(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"too many running jobs: this key may have {limit} at once; wait for current jobs to finish",
    )


def body_issues(error: ValidationError) -> list[dict[str, Any]]:
    """The form's validation issues as FastAPI reports a body's: located under `body`."""
    return [{**issue, "loc": ("body", *issue["loc"])} for issue in error.errors()]


def add_exception_handlers(app: FastAPI) -> None:
    # Starlette types every handler as taking Exception; it calls each with the type it is registered for.
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(InputRejectedError, _input_rejected)  # type: ignore[arg-type]
    app.add_exception_handler(AnalysisError, _analysis_failed)  # type: ignore[arg-type]
    app.add_exception_handler(OSError, _storage_failed)  # type: ignore[arg-type]
    for lost in WORKER_LOSS:
        app.add_exception_handler(lost, _worker_lost)
    app.add_exception_handler(Exception, _unexpected_error)


def error_shape(request: Request) -> ErrorShape | None:
    """The error shape of the protocol whose path `request` is on; None: ours."""
    shapes: list[ErrorShape] = getattr(request.app.state, "error_shapes", [])
    return next((shape for shape in shapes if shape.covers(request.url.path)), None)


def answer(request: Request, status_code: int, detail: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An error answer in the shape of the protocol `request` speaks."""
    shape = error_shape(request)
    body = shape.body(status_code, detail) if shape is not None else {"detail": detail}
    return JSONResponse(body, status_code=status_code, headers=headers)


async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
    """A route's or a dependency's HTTPException (401, 404, 429, ...): Starlette's answer, in the protocol's
    shape."""
    if error_shape(request) is None or not isinstance(error.detail, str):
        return JSONResponse({"detail": error.detail}, status_code=error.status_code, headers=error.headers)
    return answer(request, error.status_code, error.detail, error.headers)


async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 array, trimmed to `{loc, msg, type}`: the input is not echoed back. Another protocol's
    paths answer 400 with the fields and what is wrong with them, in its shape."""
    issues = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in error.errors()]
    if error_shape(request) is not None:
        named = "; ".join(f"{'.'.join(str(part) for part in issue['loc'][1:])}: {issue['msg']}" for issue in issues)
        return answer(request, status.HTTP_400_BAD_REQUEST, f"invalid request: {named}")
    return JSONResponse({"detail": issues}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _input_rejected(request: Request, error: InputRejectedError) -> JSONResponse:
    """What the pipeline refused (undecodable audio, a bad URL, ...), also when it crossed from a replica."""
    rejected = client_error(error)
    if rejected is None:
        return await _unexpected_error(request, error)
    return answer(request, rejected.status, str(rejected))


async def _analysis_failed(request: Request, error: AnalysisError) -> JSONResponse:
    """The LLM step failed after the transcription: 413 when it ran out of the synchronous budget (nexara's
    answer: resubmit as a job), 502 when the backend failed or its answers never met the schema."""
    failure = analysis_failure(error)
    if failure is None:
        return await _unexpected_error(request, error)
    if isinstance(failure, AnalysisTimeout):
        return answer(request, 413, analysis_error_message(failure))
    logger.error("the LLM analysis failed on %s %s: %s", request.method, request.url.path, failure)
    return answer(request, status.HTTP_502_BAD_GATEWAY, analysis_error_message(failure))


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
        return answer(request, status.HTTP_507_INSUFFICIENT_STORAGE, detail)
    detail = f"storage unavailable: the service's disk refused a write ({failure.strerror}); try again later"
    return answer(request, status.HTTP_503_SERVICE_UNAVAILABLE, detail, {"Retry-After": str(STORAGE_RETRY_AFTER_S)})


WORKER_LOST_RETRY_AFTER_S = 5


async def _worker_lost(request: Request, error: Exception) -> JSONResponse:
    """A replica or actor went away mid-request (a crash, a restart, a redeploy) and the one retry inside the
    service did not help: Ray is replacing it, so the client may send the request again shortly."""
    if not worker_lost(error):
        return await _unexpected_error(request, error)
    logger.warning("a worker was lost during %s %s: %s", request.method, request.url.path, type(error).__name__)
    detail = "service unavailable: the worker handling this request stopped (a restart or redeploy); send it again"
    return answer(request, status.HTTP_503_SERVICE_UNAVAILABLE, detail, {"Retry-After": str(WORKER_LOST_RETRY_AFTER_S)})


async def _unexpected_error(request: Request, error: Exception) -> JSONResponse:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return answer(request, 500, "internal error: the request could not be completed")
