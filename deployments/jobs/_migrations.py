"""Job records stored by earlier versions, brought into the current shape when the store opens, so that
everything after the store (the tracker, the edge's rendering) knows one shape only.

The older shapes:
- the client's choices of rendering as loose fields of the request: `response_format`, and
  `timestamp_granularities`, empty or absent for jobs stored before they were kept, when `include_words`
  stood for them; the request now holds them under `render`, as the edge's `RenderSpec` writes them (JSON data
  the jobs never read: this module writes that dict itself, and does not import the edge).
- a finished job's `result`: a body rendered by versions before the tracker kept domain results. A body is
  not a transcript, and cannot be rendered again (an old diarized body does not even have today's shape), so
  such a job expires at once: a poll finds it gone, as it would after `retention_s` anyway.
"""

from typing import Any

LEGACY_REQUEST_FIELDS = ("response_format", "timestamp_granularities", "include_words")


def is_current(record: dict[str, Any]) -> bool:
    """Whether `record` (a `Job` as JSON) has the current shape already."""
    return "render" in record["request"] and "result" not in record


def current_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """`record` in the current shape (itself when it has it); None for a job whose outcome is only a body
    rendered by an earlier version."""
    if is_current(record):
        return record
    record = dict(record)
    body = record.pop("result", None)
    if body is not None and record.get("transcript") is None:
        return None
    request = dict(record["request"])
    if "render" not in request:
        request["render"] = _render(request)
    for field in LEGACY_REQUEST_FIELDS:
        request.pop(field, None)
    record["request"] = request
    return record


def _render(request: dict[str, Any]) -> dict[str, Any]:
    """The loose fields as the edge's `RenderSpec` (`serve_app/rest/rendering.py`) writes them to `render`."""
    granularities = request.get("timestamp_granularities") or ["word" if request.get("include_words") else "segment"]
    return {"response_format": request.get("response_format", "json"), "timestamp_granularities": granularities}
