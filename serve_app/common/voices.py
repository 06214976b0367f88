"""The enrolled voices a request names (`voices`: REST forms, live sessions' queries): each id one of the
caller's own, or a 400 that names it. Another key's voice reads as unknown, as it does to the voices API."""

from fastapi import HTTPException, status
from starlette.concurrency import run_in_threadpool

from deployments.types import KnownVoice
from serve_app.common.services import Services

MAX_VOICE_ID_CHARS = 64


def split_ids(values: list[str]) -> list[str]:
    """Ids given as repeated fields or parameters, or as one comma-separated value: the ids, in order."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


async def known_voices(services: Services, owner: str, voice_ids: list[str], field: str = "voices") -> list[KnownVoice]:
    """The caller's voices of `voice_ids`, in the order given (an id given twice counts once)."""
    ids = list(dict.fromkeys(voice_id.strip() for voice_id in voice_ids if voice_id.strip()))
    if not ids:
        return []
    limit = services.config.voices.max_per_request
    if len(ids) > limit:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"{field}: at most {limit} voices per request, got {len(ids)}")
    for voice_id in ids:
        if len(voice_id) > MAX_VOICE_ID_CHARS:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"{field}: {voice_id[:64]!r}... is not a voice id")
    store = services.voice_store
    found = await run_in_threadpool(store.many, owner, ids) if store is not None else {}
    missing = [voice_id for voice_id in ids if voice_id not in found]
    if missing:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"{field}: no voice {', '.join(repr(voice_id) for voice_id in missing)} is enrolled with this key"
            " (GET /v1/voices lists them)",
        )
    return [found[voice_id].known() for voice_id in ids]
