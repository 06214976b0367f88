"""Deepgram's error body, `{"err_code", "err_msg", "request_id"}`, for every failure on `/v1/listen`: a bad key
is `INVALID_AUTH` (401, which the SDK raises as its `ApiError`), a bad parameter `Bad Request` (400, its
`BadRequestError`), a spent balance `ASR_PAYMENT_REQUIRED` (402), a rate `TOO_MANY_REQUESTS` (429)."""

import uuid
from typing import Any

ERROR_CODES = {
    400: "Bad Request",
    401: "INVALID_AUTH",
    402: "ASR_PAYMENT_REQUIRED",
    403: "INSUFFICIENT_PERMISSIONS",
    404: "NOT_FOUND",
    408: "REQUEST_TIMEOUT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "Bad Request",
    429: "TOO_MANY_REQUESTS",
    500: "INTERNAL_SERVER_ERROR",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    507: "INSUFFICIENT_STORAGE",
}
PATHS = ("/v1/listen",)


def error_body(status: int, message: str, request_id: str | None = None) -> dict[str, Any]:
    """The body Deepgram answers an error with; a fresh request id unless the request already has one."""
    code = ERROR_CODES.get(status, "Bad Request" if 400 <= status < 500 else "INTERNAL_SERVER_ERROR")
    return {"err_code": code, "err_msg": message, "request_id": request_id or str(uuid.uuid4())}
