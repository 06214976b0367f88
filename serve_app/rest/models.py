"""`GET /v1/models` (and `/models`): the model ids this deployment accepts (`model_ids` in its config)."""

from fastapi import APIRouter

from serve_app.common.dependencies import ConfigDependency
from serve_app.rest.schemas.models import ModelCard, ModelList

router = APIRouter(tags=["models"])

MODEL_CREATED = 1677610602  # the date OpenAI lists for whisper-1, so clients see the same card


@router.get("/v1/models", response_model=ModelList)
@router.get("/models", response_model=ModelList, include_in_schema=False)
async def list_models(config: ConfigDependency) -> ModelList:
    return ModelList(
        data=[ModelCard(id=model_id, created=MODEL_CREATED, owned_by="stt-service") for model_id in config.model_ids]
    )
