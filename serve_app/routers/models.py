"""`GET /v1/models` (and `/models`): the one model this service offers."""

from fastapi import APIRouter

from serve_app.schemas import MODEL_ID, ModelCard, ModelList

router = APIRouter(tags=["models"])

MODEL_CREATED = 1677610602  # the date OpenAI lists for whisper-1, so clients see the same card


@router.get("/v1/models", response_model=ModelList)
@router.get("/models", response_model=ModelList, include_in_schema=False)
async def list_models() -> ModelList:
    return ModelList(data=[ModelCard(id=MODEL_ID, created=MODEL_CREATED, owned_by="stt-service")])
