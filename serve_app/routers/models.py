"""`GET /v1/models` (and `/models`): the model ids this deployment accepts (`model_ids` in its config)."""

from fastapi import APIRouter, Request

from serve_app.schemas import ModelCard, ModelList

router = APIRouter(tags=["models"])

MODEL_CREATED = 1677610602  # the date OpenAI lists for whisper-1, so clients see the same card


@router.get("/v1/models", response_model=ModelList)
@router.get("/models", response_model=ModelList, include_in_schema=False)
async def list_models(request: Request) -> ModelList:
    model_ids: list[str] = request.app.state.config.model_ids
    return ModelList(
        data=[ModelCard(id=model_id, created=MODEL_CREATED, owned_by="stt-service") for model_id in model_ids]
    )
