"""What a model call cost, from the per-million-token prices configured for its model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff.config import ModelConfig

if TYPE_CHECKING:
    from wyckoff.token_usage import TokenUsage

CACHE_WRITE_PRICE_FACTOR = 1.25  # Anthropic: 5-minute cache writes cost 1.25x input


def price(model: ModelConfig, usage: TokenUsage) -> float | None:
    """Cost of one call in the currency of the configured prices; None when unpriced."""
    if model.input_per_1m is None or model.output_per_1m is None:
        return None
    cache_read_price = (
        model.cache_read_per_1m if model.cache_read_per_1m is not None else model.input_per_1m
    )
    write_factor = CACHE_WRITE_PRICE_FACTOR if model.provider == "claude" else 1.0
    total = (
        usage.get("input_tokens", 0) * model.input_per_1m
        + usage.get("output_tokens", 0) * model.output_per_1m
        + usage.get("cache_read_tokens", 0) * cache_read_price
        + usage.get("cache_write_tokens", 0) * model.input_per_1m * write_factor
    )
    return round(total / 1_000_000, 6)
