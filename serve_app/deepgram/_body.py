"""The body of `POST /v1/listen` as Deepgram's clients send it: the audio itself (any content type but JSON),
streamed to the spool with its SHA-256 and the size limit enforced while reading, or JSON `{"url": ...}`."""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException, Request, status
from starlette.requests import ClientDisconnect

from serve_app.common.upload import too_large

MAX_JSON_BYTES = 64 * 1024


@dataclass(frozen=True)
class ListenBody:
    url: str | None = None
    sha256: str | None = None
    size: int = 0


async def receive_body(request: Request, spool_path: Path, max_bytes: int) -> ListenBody:
    """The URL to fetch, or the audio spooled at `spool_path` (removed again on any failure here)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    declared = request.headers.get("content-length")
    if media_type == "application/json":
        return ListenBody(url=await _url(request))
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(max_bytes)
    digest, size = hashlib.sha256(), 0
    spool_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with spool_path.open("wb") as spooled:
            async for piece in request.stream():
                size += len(piece)
                if size > max_bytes:
                    raise too_large(max_bytes)
                digest.update(piece)
                spooled.write(piece)
    except ClientDisconnect:
        spool_path.unlink(missing_ok=True)
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the client disconnected during the upload") from None
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    if size == 0:
        spool_path.unlink(missing_ok=True)
        raise HTTPException(status.HTTP_400_BAD_REQUEST, 'the body is empty: send the audio, or JSON {"url": ...}')
    return ListenBody(sha256=digest.hexdigest(), size=size)


async def _url(request: Request) -> str:
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > MAX_JSON_BYTES:
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"a JSON body is at most {MAX_JSON_BYTES} bytes")
    try:
        parsed = json.loads(body)
    except ValueError:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, 'the JSON body is malformed: send {"url": "https://..."}'
        ) from None
    url = parsed.get("url") if isinstance(parsed, dict) else None
    if not isinstance(url, str) or not url.strip():
        raise HTTPException(status.HTTP_400_BAD_REQUEST, 'a JSON body must be {"url": "https://..."}')
    return url.strip()
