"""`POST /v1/audio/translations`: OpenAI's translation endpoint, Whisper's task=translate. Speech in any
language comes back as English text; the same pipeline and Transcriber as a transcription, billed as one
(task `translate`). A model that knows only English cannot translate: the pipeline refuses it (400)."""

from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployments.types import PipelineResult, Transcript
from serve_app.common.auth import FUNDS_ERROR
from serve_app.common.dependencies import FundedKey, ServicesDependency
from serve_app.common.errors import UPLOAD_ERRORS
from serve_app.common.synchronous import transcribe_synchronously
from serve_app.rendering.bodies import TranscriptionJson, TranslationVerboseJson
from serve_app.rendering.response_formats import render_translation
from serve_app.rest.form_intake import read_translation_form
from serve_app.rest.schemas.audio_form import multipart_request_body
from serve_app.rest.schemas.translation_form import TranslationForm

router = APIRouter(tags=["translations"])


@router.post(
    "/v1/audio/translations",
    response_model=TranscriptionJson | TranslationVerboseJson,
    responses={
        200: {"content": {"text/plain": {}, "text/vtt": {}}, "description": "The English text, in response_format."},
        **UPLOAD_ERRORS,
        **FUNDS_ERROR,
    },
    openapi_extra={"requestBody": multipart_request_body(TranslationForm)},
)
async def create_translation(request: Request, key: FundedKey, services: ServicesDependency) -> Response:
    """Spool the upload (or later the URL's file), let the pipeline translate it, charge, render."""
    read = partial(read_translation_form, request, owner=key.owner)
    return await transcribe_synchronously(services, key, read, _render, what="a synchronous translation")


def _render(result: PipelineResult, form: TranslationForm, _: str) -> Response:
    """The language charged is the one spoken; the text is English."""
    if not isinstance(result, Transcript):
        raise RuntimeError("a translation came back diarized: the pipeline was asked for no speakers")
    return render_translation(result, form.response_format)
