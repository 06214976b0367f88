"""`POST /v1/audio/translations`: OpenAI's translation endpoint, Whisper's task=translate. Speech in any
language comes back as English text; the same pipeline and Transcriber as a transcription, billed as one
(task `translate`). A model that knows only English cannot translate: the pipeline refuses it (400)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployments.retry import retry_on_worker_loss
from deployments.types import PipelineResult, Transcript
from serve_app.common.auth import FUNDS_ERROR
from serve_app.common.dependencies import ConfigDependency, FundedKey, KeyPrice, LedgerDependency, PipelineDependency
from serve_app.common.errors import UPLOAD_ERRORS
from serve_app.common.intake import Intake
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
async def create_translation(
    request: Request,
    key: FundedKey,
    price: KeyPrice,
    config: ConfigDependency,
    pipeline: PipelineDependency,
    ledger: LedgerDependency,
) -> Response:
    """Spool the upload (or later the URL's file), let the pipeline translate it, charge, render."""
    with Intake(config, price) as intake:
        form = await read_translation_form(request, intake)
        pipeline_request = intake.pipeline_request(form)
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: pipeline.transcribe.remote(pipeline_request), "a synchronous translation", attempts=2
        )
        if not isinstance(result, Transcript):
            raise RuntimeError("a translation came back diarized: the pipeline was asked for no speakers")
        await intake.charge(ledger, key.owner, form)(result)  # the language recorded is the one spoken
    return render_translation(result, form.response_format)
