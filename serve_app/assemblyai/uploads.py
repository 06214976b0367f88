"""`POST /v2/upload`'s files: the raw body streamed to the spool (never whole in memory, the jobs' upload limit
enforced while reading), named for the key that sent it. A transcript that names its `upload_url` takes the
file as its job's input (a rename: no copy, nothing downloaded), and the job removes it when it ends, as any
job's upload; so an upload serves one transcript. One never used is deleted after `upload_ttl_s`, by the next
upload or transcript request on any replica (at most one sweep a minute each)."""

import asyncio
import os
import re
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import HTTPException, Request, status

from serve_app.common.upload import receive_raw_body

PREFIX = "assemblyai-upload-"
SWEEP_INTERVAL_S = 60.0
UPLOAD_PATH = re.compile(r"/v2/upload/([0-9a-f]{32})")


class Uploads:
    """The uploads of every key, in the spool as `assemblyai-upload-<owner>-<id>` (files only: the spool holds
    nothing else between requests)."""

    def __init__(self, spool_dir: Path, ttl_s: float, max_bytes: int) -> None:
        self.spool_dir = spool_dir
        self.ttl_s, self.max_bytes = ttl_s, max_bytes

    def path(self, owner: str, upload_id: str) -> Path:
        return self.spool_dir / f"{PREFIX}{owner}-{upload_id}"

    async def receive(self, request: Request, owner: str) -> str:
        """Stream the body to a new upload of `owner`'s; its id. Nothing is left behind on any failure."""
        upload_id = uuid.uuid4().hex
        empty = "the upload is empty: send the file's bytes as the body"
        await receive_raw_body(request, self.path(owner, upload_id), self.max_bytes, empty)
        return upload_id

    def take_for_job(self, owner: str, upload_id: str, job_path: Path) -> None:
        """Make the upload the job's input, or 400 when there is no such upload of `owner`'s (any more)."""
        try:
            os.rename(self.path(owner, upload_id), job_path)
        except FileNotFoundError:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST,
                "audio_url: no such upload for this key (a transcript used it already, it expired, or another key"
                " uploaded it); upload the file again",
            ) from None

    def sweep(self, now: float | None = None) -> int:
        """Delete uploads older than `ttl_s` that no transcript took; how many."""
        cutoff = (time.time() if now is None else now) - self.ttl_s
        removed = 0
        for file in self.spool_dir.glob(f"{PREFIX}*"):
            try:
                if file.stat().st_mtime < cutoff:
                    file.unlink(missing_ok=True)
                    removed += 1
            except FileNotFoundError:
                continue
        return removed


class Sweeper:
    """At most one sweep per `interval_s` on this replica, off the event loop."""

    def __init__(self, interval_s: float = SWEEP_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.last = float("-inf")

    async def maybe_sweep(self, uploads: Uploads) -> None:
        if time.monotonic() - self.last < self.interval_s:
            return
        self.last = time.monotonic()
        await asyncio.to_thread(uploads.sweep)


def upload_id_in(audio_url: str, request: Request) -> str | None:
    """The upload id when `audio_url` is one of this service's upload URLs (as `upload_url` gave it: this
    request's host), else None (a URL to fetch)."""
    try:
        parts = urlsplit(audio_url)
    except ValueError:
        return None
    if parts.netloc.lower() != request.url.netloc.lower() or parts.query:
        return None
    match = UPLOAD_PATH.fullmatch(parts.path.removeprefix("/api"))
    return match.group(1) if match else None


def upload_url(request: Request, upload_id: str) -> str:
    return str(request.url.replace(path=f"/v2/upload/{upload_id}", query=""))
