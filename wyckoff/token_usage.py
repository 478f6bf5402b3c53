"""The token counts of one model call: what providers report, pricing prices and the usage
store keeps (a plain type, so none of them imports another for it)."""

from __future__ import annotations

from typing import TypedDict


class TokenUsage(TypedDict):
    input_tokens: int  # uncached input only
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
