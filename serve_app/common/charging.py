"""How a request is billed (`charge_details`, for synchronous requests and jobs alike), and charging one
synchronous request's completed work, once."""

from pathlib import Path
from typing import Any

from ray.actor import ActorProxy

from deployments.billing import pricing
from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Price
from deployments.types import PipelineResult, TranscriptionOptions


def charge_details(price: Price, model: str, options: TranscriptionOptions, diarized: bool) -> ChargeDetails:
    """How a request is billed: the key's price, the model id asked for, the task (`diarize`, or the options'
    `transcribe` or `translate`) and the options that are priced."""
    return ChargeDetails(
        task="diarize" if diarized else options.task,
        model=model,
        rate_per_min=price.rate_per_min,
        profanity_filter=options.profanity_filter,
        llm_price_per_1k_tokens=price.llm_price_per_1k_tokens,
        emotions_rate_per_min=price.emotions_rate_per_min,
    )


class Charge:
    """Charges one synchronous request's completed work, once (by request id)."""

    def __init__(
        self, ledger: ActorProxy[Any], request_id: str, owner: str, details: ChargeDetails, source: Path
    ) -> None:
        self.ledger, self.request_id, self.owner = ledger, request_id, owner
        self.details, self.source = details, source

    async def __call__(self, result: PipelineResult) -> None:
        details = self.details.completed(result.language, self.source).analyzed(result.analysis)
        await pricing.charge(self.ledger, self.request_id, self.owner, result.billed_seconds, details)
