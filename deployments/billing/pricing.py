"""What a key pays, whether it may still spend, and the one way work is charged.

Every path that bills (a synchronous request, a streamed one, a live session, an async job) prices with
`Price.of`, checks funds with `funds`, and records its completed work with `charge`, so a rule about money
changes in one place. The edge only translates the answer to HTTP (402).

Balances are money: `balance` in the key's `currency`, spent at `rate_per_min` per audio minute (both
default to `BillingConfig`). A key written with `balance_seconds` (earlier versions) keeps working: that
many audio seconds at the key's rate.
"""

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field
from ray.actor import ActorProxy

from deployments.billing.ledger import ChargeDetails
from deployments.config import StrictModel

Currency = Literal["EUR", "RUB"]
"""The currencies the nexara SDK's billing types accept."""


class BillingConfig(StrictModel):
    """The price of keys that do not set their own (`rate_per_min`, `currency` in the keys file), and the
    analyses' prices, the same for every key."""

    rate_per_min: float = Field(0.006, ge=0, description="Price of one minute of audio.")
    currency: Currency = Field("EUR", description="Currency of balances and prices (those the nexara SDK accepts).")
    llm_price_per_1k_tokens: float = Field(
        0.0, ge=0, description="Price of 1000 LLM tokens (prompt and answer together) of a request's analysis."
    )
    emotions_rate_per_min: float = Field(
        0.0, ge=0, description="Surcharge per audio minute when emotions were returned (not when none were)."
    )


class PricedKey(Protocol):
    """What pricing reads of an API key: its own price and balance, each None where the defaults apply."""

    @property
    def rate_per_min(self) -> float | None: ...
    @property
    def currency(self) -> Currency | None: ...
    @property
    def balance(self) -> float | None: ...
    @property
    def balance_seconds(self) -> float | None: ...


class Price(BaseModel):
    """A key's price and balance, with the defaults filled in."""

    rate_per_min: float
    currency: Currency
    balance: float | None = Field(description="Money the key may spend in all; None: unlimited.")
    llm_price_per_1k_tokens: float = 0.0
    emotions_rate_per_min: float = 0.0

    @classmethod
    def of(cls, key: PricedKey, defaults: BillingConfig) -> "Price":
        rate = key.rate_per_min if key.rate_per_min is not None else defaults.rate_per_min
        balance = key.balance
        if key.balance_seconds is not None and rate > 0:  # at no price, audio seconds cost nothing
            balance = key.balance_seconds / 60 * rate
        return cls(
            rate_per_min=rate,
            currency=key.currency or defaults.currency,
            balance=balance,
            llm_price_per_1k_tokens=defaults.llm_price_per_1k_tokens,
            emotions_rate_per_min=defaults.emotions_rate_per_min,
        )


@dataclass(frozen=True)
class Funds:
    """A key's price and what it has spent so far, from the ledger."""

    price: Price
    spent: float

    @property
    def left(self) -> float | None:
        """Money left on the balance; None: unlimited."""
        return None if self.price.balance is None else self.price.balance - self.spent

    @property
    def exhausted(self) -> bool:
        """The balance is spent: no new work is accepted (completed work is still charged, so the last
        request may take a balance below zero)."""
        return self.left is not None and self.left <= 0

    def audio_s(self, channels: int) -> float:
        """Seconds of audio per channel the money left pays for, with `channels` transcribed."""
        if self.left is None or self.price.rate_per_min <= 0:
            return math.inf
        return self.left / self.price.rate_per_min * 60 / channels


async def spent(ledger: ActorProxy[Any], owner: str, price: Price) -> float:
    """Money charged to `owner` in all; charges recorded without a cost are priced at `price`."""
    spent_money: float = await ledger.spent.remote(owner, price.rate_per_min)
    return spent_money


async def funds(ledger: ActorProxy[Any], owner: str, price: Price) -> Funds:
    """`owner`'s funds; an unlimited key's without asking the ledger."""
    if price.balance is None:
        return Funds(price=price, spent=0.0)
    return Funds(price=price, spent=await spent(ledger, owner, price))


async def charge(ledger: ActorProxy[Any], charge_id: str, owner: str, seconds: float, details: ChargeDetails) -> bool:
    """Charge `seconds` of completed audio to `owner`, once per `charge_id` (the ledger ignores a repeat:
    False). `details.rate_per_min`, set from the key's `Price` when the work was accepted, prices it."""
    charged: bool = await ledger.charge.remote(charge_id, owner, seconds, details)
    return charged
