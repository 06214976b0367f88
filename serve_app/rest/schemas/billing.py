"""The bodies of `GET /v1/billing/balance` and `GET /v1/billing/usage`."""

from pydantic import BaseModel, Field

from serve_app.rendering.times import UtcDatetime


class Balance(BaseModel):
    """`GET /v1/billing/balance`."""

    balance: float = Field(
        description="What is left to spend. An unlimited key starts at 0 and goes below it by what it used;"
        " any key's last request may take it below zero."
    )
    rate_per_min: float = Field(description="Price of one minute of audio for this key.")
    currency: str
    unlimited: bool = Field(description="True for a key without a balance: it is never refused for funds.")


class UsageApiKey(BaseModel):
    id: int
    name: str = Field(description="`Key #<id>` for a key without a name.")
    deleted: bool = Field(description="Always false here: a key only ever sees its own usage.")


class UsageItem(BaseModel):
    """One charged request or job."""

    timestamp: UtcDatetime
    seconds: float = Field(description="Audio duration charged.")
    bytes: int = Field(description="Size of the input as received.")
    task: str
    model: str | None
    language: str | None
    cost: float | None = Field(description="What it cost, in the page's currency; null for charges made before"
                               " costs were recorded.")  # fmt: skip
    profanity_filter: bool
    role_tagging: bool = Field(False, description="Speakers were given roles (`roles`).")
    emotions: bool = Field(False, description="Emotions were returned (asked for and none returned: false).")
    llm_input_tokens: int | None = Field(None, description="Tokens the LLM read, when an analysis ran.")
    llm_output_tokens: int | None = Field(None, description="Tokens the LLM wrote; both are in `cost`.")
    request_id: str = Field(description="The job id, or the synchronous request's id.")
    api_key: UsageApiKey


class UsagePage(BaseModel):
    """`GET /v1/billing/usage`: newest first; pass `next_cursor` as `cursor` for the next (older) page."""

    items: list[UsageItem]
    next_cursor: int | None = Field(description="Set only when has_more.")
    has_more: bool
    currency: str
