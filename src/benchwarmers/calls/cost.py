"""What one call cost, in USD: the one pure function every figure of money
is built from (the call log's `cost_usd`, the ledger's, the `bench` object's
`costUsd`, `/metrics`' spend, `GET /bench/usage`).

Prices are USD per million tokens, as models.dev and the providers publish
them: `price_in` for input, `price_out` for output, `price_cached` for the
input the provider read from its prompt cache (OpenAI's
`prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`,
Gemini's `cachedContentTokenCount`). Cached tokens are a part of the input
tokens (every adapter counts them in `input_tokens`), so they are billed at
the cached price instead of the input price, never twice. A model with no
cached price is billed the input price for them: the catalog often has none,
and the input price is the most they can cost (Anthropic's cache *writes*
cost more than input; they are billed at the input price here, which
under-counts them by a quarter: the providers' own bill is the reference).

Unknown is not free: a price that is None makes the cost None, however few
the tokens, and a sum of costs says whether it left some out (`Total`). A
model priced 0 in and out costs 0.

The caller computes a call's cost as it ends, from the price its model view
holds in memory (`store.views.ModelView`: no read per call), which is the price
in effect at the call's time, and keeps the figure on the call's row: a
later change of price (dated in `model_prices`, `store/prices.py`) never
re-prices a call already made.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from benchwarmers.types import Usage

PER_TOKENS = 1_000_000
# Costs are kept to a millionth of a cent: enough for a one-token call at any price.
DIGITS = 8


def call_cost(
    usage: Usage, price_in: float | None, price_out: float | None, price_cached: float | None = None
) -> float | None:
    """USD for these tokens at these prices; None when a price is unknown.
    O(1), no I/O: it runs as every call ends."""
    if price_in is None or price_out is None:
        return None
    cached = min(max(usage.cached_input_tokens, 0), usage.input_tokens)
    cached_price = price_in if price_cached is None else price_cached
    usd = (
        (usage.input_tokens - cached) * price_in + cached * cached_price + usage.output_tokens * price_out
    ) / PER_TOKENS
    return round(usd, DIGITS)


@dataclass(frozen=True, slots=True)
class Total:
    """A sum of costs: the known ones added, and whether any was unknown."""

    usd: float = 0.0
    complete: bool = True

    @classmethod
    def of(cls, costs: Iterable[float | None]) -> Total:
        usd, complete = 0.0, True
        for cost in costs:
            if cost is None:
                complete = False
            else:
                usd += cost
        return cls(round(usd, DIGITS), complete)
