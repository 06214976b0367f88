"""`GET /health`: liveness for load balancers, without a key. It says nothing about keys, models or load."""

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"] = "ok"


@router.get("/health", response_model=Health)
async def health() -> Health:
    return Health()
