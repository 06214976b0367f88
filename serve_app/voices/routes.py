"""`/v1/voices`: enrol a voice (a clip of one speaker, or a speaker of one of the key's diarized jobs), list,
read, rename and delete them. A key sees only its own voices: another key's id is a 404, as an unknown one.

The clip is spooled as an upload is and handed to the pipeline deployment (decoding, VAD, the Diarizer's speaker
encoder: `TranscriptionPipeline.voice_print`); only the embedding comes back, and only it and the name are stored
(deployments/voices/store.py). The store's calls block: they run in the thread pool.
"""

import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from deployments.storage.spool import remove_spooled
from deployments.types import VoicePrint
from deployments.voices.store import StoredVoice, VoiceLimitError, VoiceStore
from serve_app.common.dependencies import API_KEY_REQUIRED, CurrentKey, ServicesDependency
from serve_app.common.errors import UPLOAD_ERRORS, ErrorResponse, body_issues
from serve_app.common.services import Services
from serve_app.common.upload import FormRejectedError, read_json_body, receive_form
from serve_app.voices.job_speech import job_voice_print
from serve_app.voices.schemas import MAX_NAME_CHARS, Voice, VoiceFromJob, VoiceList, VoiceUpdate

T = TypeVar("T")

NOT_FOUND = "no voice with this id is enrolled with this key"
MAX_CLIP_BYTES = 50 * 1024 * 1024
"""An enrolment clip's upload limit: a minute of speech in any container, with room to spare."""
VOICE_ERRORS: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse, "description": NOT_FOUND}}
ENROLMENT_ERRORS: dict[int | str, dict[str, Any]] = {
    **UPLOAD_ERRORS,
    403: {"model": ErrorResponse, "description": "Enrolment is off on this service (voices.max_per_key: 0)."},
    409: {"model": ErrorResponse, "description": "The key keeps as many voices as it may: delete one first."},
}
LIST_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "`after` is not one of this key's voices."}
}

router = APIRouter(prefix="/v1/voices", tags=["voices"], **API_KEY_REQUIRED)


def get_store(services: ServicesDependency) -> VoiceStore:
    if services.voice_store is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "this service keeps no voices")
    return services.voice_store


Store = Annotated[VoiceStore, Depends(get_store)]


async def _blocking(call: Callable[..., T], *args: Any) -> T:
    return await run_in_threadpool(call, *args)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=Voice,
    responses=ENROLMENT_ERRORS,
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["name", "file"],
                        "properties": {
                            "name": {"type": "string", "maxLength": MAX_NAME_CHARS},
                            "file": {"type": "string", "format": "binary",
                                     "description": "3 to 60 s of one speaker's speech (longer is trimmed)."},
                        },
                    }
                },
                "application/json": {"schema": VoiceFromJob.model_json_schema()},
            }
        }
    },
)  # fmt: skip
async def create_voice(request: Request, key: CurrentKey, store: Store, services: ServicesDependency) -> Voice:
    """Enrol a voice from a clip of one speaker (multipart `name` + `file`), or from a speaker of one of this
    key's finished diarized jobs (JSON `name`, `job_id`, `speaker`)."""
    config = services.config.voices
    if config.max_per_key == 0:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "voice enrolment is off on this service (voices.max_per_key)")
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = VoiceFromJob.model_validate(await read_json_body(request, 4096))
        except ValidationError as error:
            raise RequestValidationError(body_issues(error)) from None
        name, voice = body.name, await job_voice_print(services, key.owner, body)
    else:
        name, voice = await _clip_voice_print(request, services)
    try:
        stored = await _blocking(
            store.create, key.owner, name, voice.embedding, voice.speech_s, voice.encoder, config.max_per_key
        )
    except VoiceLimitError as error:
        raise HTTPException(status.HTTP_409_CONFLICT, str(error)) from None
    return _voice(stored)


async def _clip_voice_print(request: Request, services: Services) -> tuple[str, VoicePrint]:
    spool_path = services.config.storage.spool_dir / f"voice-{uuid.uuid4()}"
    try:
        received = await receive_form(request, spool_path, MAX_CLIP_BYTES)
        names = [value.strip() for value in received.fields.get("name", []) if value.strip()]
        if not names or len(names[-1]) > MAX_NAME_CHARS:
            raise FormRejectedError(status.HTTP_400_BAD_REQUEST, f"name: give the voice a name of 1 to {MAX_NAME_CHARS}"
                                    " characters")  # fmt: skip
        unknown = sorted(set(received.fields) - {"name"})
        if unknown:
            raise FormRejectedError(status.HTTP_400_BAD_REQUEST, f"not supported by /v1/voices: {unknown[0][:64]!r};"
                                    " send name and file (or JSON name, job_id, speaker)")  # fmt: skip
        if received.file is None or received.file.size == 0:
            raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "file: send 3 to 60 s of the speaker's voice")
        voice: VoicePrint = await services.pipeline.voice_print.remote(str(spool_path), services.config.voices)
        return names[-1], voice
    finally:
        remove_spooled(spool_path)


@router.get("", response_model=VoiceList, responses=LIST_ERRORS)
async def list_voices(
    key: CurrentKey,
    store: Store,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
    after: Annotated[str | None, Query(description="The previous page's last_id.")] = None,
) -> VoiceList:
    """This key's voices, oldest first."""
    after_seq = None
    if after is not None:
        previous = await _blocking(store.get, key.owner, after)
        if previous is None:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"after: {after[:64]!r} is not one of this key's voices")
        after_seq = previous.seq
    page = await _blocking(store.page, key.owner, after_seq, limit + 1)
    data = [_voice(voice) for voice in page[:limit]]
    return VoiceList(
        data=data,
        first_id=data[0].id if data else None,
        last_id=data[-1].id if data else None,
        has_more=len(page) > limit,
    )


@router.get("/{voice_id}", response_model=Voice, responses=VOICE_ERRORS)
async def get_voice(voice_id: str, key: CurrentKey, store: Store) -> Voice:
    stored = await _blocking(store.get, key.owner, voice_id)
    if stored is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return _voice(stored)


@router.patch("/{voice_id}", response_model=Voice, responses=VOICE_ERRORS)
async def rename_voice(voice_id: str, body: VoiceUpdate, key: CurrentKey, store: Store) -> Voice:
    stored = await _blocking(store.rename, key.owner, voice_id, body.name.strip())
    if stored is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return _voice(stored)


@router.delete("/{voice_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response, responses=VOICE_ERRORS)
async def delete_voice(voice_id: str, key: CurrentKey, store: Store) -> Response:
    if not await _blocking(store.delete, key.owner, voice_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _voice(stored: StoredVoice) -> Voice:
    return Voice(id=stored.voice_id, name=stored.name, created_at=int(stored.created_at), speech_s=stored.speech_s)
