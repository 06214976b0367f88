"""The body of `POST /v1/listen` as Deepgram's clients send it: the audio itself (any content type but JSON),
streamed to the spool with its SHA-256 and the size limit enforced while reading, or JSON `{"url": ...}`."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException, Request, status

from serve_app.common.upload import read_json_body, receive_raw_body

MAX_JSON_BYTES = 64 * 1024


@dataclass(frozen=True)
class ListenBody:
    url: str | None = None
    sha256: str | None = None
    size: int = 0


async def receive_body(request: Request, spool_path: Path, max_bytes: int) -> ListenBody:
    """The URL to fetch, or the audio spooled at `spool_path` (removed again on any failure here)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "application/json":
        return ListenBody(url=await _url(request))
    digest = hashlib.sha256()
    empty = 'the body is empty: send the audio, or JSON {"url": ...}'
    size = await receive_raw_body(request, spool_path, max_bytes, empty, digest)
    return ListenBody(sha256=digest.hexdigest(), size=size)


async def _url(request: Request) -> str:
    parsed = await read_json_body(request, MAX_JSON_BYTES, 'the JSON body is malformed: send {"url": "https://..."}')
    url = parsed.get("url") if isinstance(parsed, dict) else None
    if not isinstance(url, str) or not url.strip():
        raise HTTPException(status.HTTP_400_BAD_REQUEST, 'a JSON body must be {"url": "https://..."}')
    return url.strip()
