"""`POST /v1/audio/translations`: OpenAI's translation endpoint, Whisper's task=translate. Speech in any
language comes back as English text; the same pipeline and Transcriber as a transcription, billed as one
(task `translate`). A model that knows only English cannot translate: the pipeline refuses it (400)."""

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployments.billing.ledger import ChargeDetails
from deployments.retry import retry_on_worker_loss
from deployments.storage.spool import remove_spooled
from deployments.types import PipelineRequest, PipelineResult, Transcript
from serve_app.auth import FUNDS_ERROR
from serve_app.dependencies import ConfigDependency, FundedKey, KeyPrice, LedgerDependency, PipelineDependency
from serve_app.formatting import render_translation
from serve_app.intake import UPLOAD_ERRORS, check_model, receive_translation_form
from serve_app.routers.transcriptions import Charge
from serve_app.schemas import TranscriptionJson, TranslationForm, TranslationVerboseJson, multipart_request_body

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
    request_id = str(uuid.uuid4())
    spool_path = config.storage.spool_dir / request_id
    try:
        form = await receive_translation_form(request, spool_path, config.limits.max_sync_upload_bytes)
        check_model(form.model, config)
        pipeline_request = PipelineRequest(
            source_path=str(spool_path),
            url=form.url,
            max_bytes=config.limits.max_sync_upload_bytes,
            options=form.transcription_options(),
            interactive=True,
        )
        details = ChargeDetails(
            task="translate",
            model=form.model,
            rate_per_min=price.rate_per_min,
            llm_price_per_1k_tokens=price.llm_price_per_1k_tokens,
            emotions_rate_per_min=price.emotions_rate_per_min,
        )
        charge = Charge(ledger, request_id, key.owner, details, spool_path)
        result: PipelineResult = await retry_on_worker_loss(  # once more if its pipeline replica dies
            lambda: pipeline.transcribe.remote(pipeline_request), "a synchronous translation", attempts=2
        )
        if not isinstance(result, Transcript):
            raise RuntimeError("a translation came back diarized: the pipeline was asked for no speakers")
        await charge(result)  # the language recorded is the one spoken (most of the speech's)
    finally:
        remove_spooled(spool_path)
    return render_translation(result, form.response_format)
