"""`GET /v1/billing/balance` and `GET /v1/billing/usage`: a key's balance and its charges, from the ledger.

A key sees only its own usage: charges are stored by the key's SHA-256 and looked up by the caller's.
"""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query

from deployments.billing import pricing
from deployments.billing.ledger import UsageRow
from serve_app.common.dependencies import CurrentKey, KeyPrice, LedgerDependency
from serve_app.rest.schemas.billing import Balance, UsageApiKey, UsageItem, UsagePage

router = APIRouter(tags=["billing"])


@router.get("/v1/billing/balance", response_model=Balance)
async def get_balance(key: CurrentKey, price: KeyPrice, ledger: LedgerDependency) -> Balance:
    spent = await pricing.spent(ledger, key.owner, price)
    return Balance(
        balance=round((price.balance or 0.0) - spent, 6),
        rate_per_min=price.rate_per_min,
        currency=price.currency,
        unlimited=price.balance is None,
    )


@router.get("/v1/billing/usage", response_model=UsagePage)
async def get_usage(
    key: CurrentKey,
    price: KeyPrice,
    ledger: LedgerDependency,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 50,
    cursor: Annotated[int | None, Query(ge=1, description="The previous page's next_cursor.")] = None,
) -> UsagePage:
    """Newest first, keyset-paginated over the ledger's row id: charges made while paging appear above the
    first page instead of shifting rows across pages."""
    rows: list[UsageRow] = await ledger.usage_page.remote(key.owner, cursor, limit + 1)
    has_more = len(rows) > limit
    rows = rows[:limit]
    api_key = UsageApiKey(id=key.key_id, name=key.display_name, deleted=False)
    return UsagePage(
        items=[_item(row, api_key) for row in rows],
        next_cursor=rows[-1].row_id if has_more else None,
        has_more=has_more,
        currency=price.currency,
    )


def _item(row: UsageRow, api_key: UsageApiKey) -> UsageItem:
    return UsageItem(
        timestamp=datetime.fromtimestamp(row.created_at, UTC),
        seconds=round(row.audio_seconds, 3),
        bytes=row.bytes,
        task=row.task,
        model=row.model,
        language=row.language,
        cost=None if row.cost is None else round(row.cost, 6),
        profanity_filter=row.profanity_filter,
        role_tagging=row.role_tagging,
        emotions=row.emotions,
        llm_input_tokens=row.llm_input_tokens,
        llm_output_tokens=row.llm_output_tokens,
        request_id=row.charge_id,
        api_key=api_key,
    )
