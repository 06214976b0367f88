"""AssemblyAI's redacted audio: `GET /v2/transcript/{id}/redacted-audio` answers where a finished transcript's
audio with its redacted words beeped out can be fetched (202 while the transcript is processing, 400 when it has
none); that address is signed and expires, as AssemblyAI's, because its SDK fetches it without the API key
(`Transcript.save_redacted_audio`). The file is the job's, kept as long as the job (`deployments/jobs/`)."""

import asyncio
import hashlib
import hmac
import time
from functools import cache
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, JSONResponse

from deployments.config import RedactionConfig
from deployments.jobs.records import JobStatus
from deployments.storage.spool import REDACTED_SUFFIX
from serve_app.assemblyai.translation import is_ours
from serve_app.common.dependencies import CurrentKey, ServicesDependency, require_api_key
from serve_app.config import AppConfig

router = APIRouter(dependencies=[Depends(require_api_key)], include_in_schema=False)
files = APIRouter(include_in_schema=False)
"""The signed address: no API key (the signature is the permission)."""
URL_LIFETIME_S = 24 * 3600
MEDIA_TYPES = {"mp3": "audio/mpeg", "wav": "audio/wav"}


@cache
def _signing_key(secret_env: str, secret_file: str | None) -> bytes:
    """The redaction key (`redaction:`), read once per replica, turned into a key of its own for addresses."""
    secret = RedactionConfig(secret_env=secret_env, secret_file=secret_file).hash_key()
    return hmac.new(secret, b"redacted-audio-url", hashlib.sha256).digest()


def _signature(config: AppConfig, transcript_id: str, audio_format: str, expires: int) -> str:
    redaction = config.redaction_config()
    key = _signing_key(redaction.secret_env, redaction.secret_file)
    return hmac.new(key, f"{transcript_id}\0{audio_format}\0{expires}".encode(), hashlib.sha256).hexdigest()


@router.get("/v2/transcript/{transcript_id}/redacted-audio")
async def redacted_audio(
    transcript_id: str, request: Request, key: CurrentKey, services: ServicesDependency
) -> JSONResponse:
    job = await asyncio.to_thread(services.jobs.get, transcript_id, key.owner) if services.jobs else None
    if job is None or not is_ours(job.request.render):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"transcript {transcript_id[:64]!r} not found")
    redaction = job.request.options.redaction
    if redaction is None or redaction.audio is None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "this transcript was not asked for redact_pii_audio")
    if job.status == JobStatus.in_progress:
        return JSONResponse({"status": "redacted_audio_processing"}, status_code=status.HTTP_202_ACCEPTED)
    if not _kept(services.config, transcript_id, redaction.audio).exists():
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the redacted audio is not available (the transcript failed)")
    expires = int(time.time()) + URL_LIFETIME_S
    signature = _signature(services.config, transcript_id, redaction.audio, expires)
    path = f"/v2/transcript/{transcript_id}/redacted-audio/file.{redaction.audio}"
    url = request.url.replace(path=path, query=f"expires={expires}&signature={signature}")
    return JSONResponse({"status": "redacted_audio_ready", "redacted_audio_url": str(url)})


@files.get("/v2/transcript/{transcript_id}/redacted-audio/file.{audio_format}")
async def redacted_audio_file(
    transcript_id: str,
    audio_format: str,
    services: ServicesDependency,
    expires: Annotated[int, Query()],
    signature: Annotated[str, Query(max_length=128)],
) -> FileResponse:
    expected = _signature(services.config, transcript_id, audio_format, expires)
    if audio_format not in MEDIA_TYPES or not hmac.compare_digest(expected, signature) or expires < time.time():
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the address is not valid or has expired: ask for it again")
    kept = _kept(services.config, transcript_id, audio_format)
    if not kept.exists():
        raise HTTPException(status.HTTP_404_NOT_FOUND, "the transcript and its redacted audio are gone")
    return FileResponse(kept, media_type=MEDIA_TYPES[audio_format])


def _kept(config: AppConfig, transcript_id: str, audio_format: str) -> Path:
    return config.storage.recordings_dir / f"{transcript_id}{REDACTED_SUFFIX}.{audio_format}"
