"""The argument type of every tool parameter that names a stock: a code or a name, as text.

Clients send numbers too (the MCP Inspector's form sends `code=600519` as a number, models
sometimes emit one): a whole number is read as a code, zero-padded to six digits (1 ->
000001), so the one validation path accepts it for the agent and MCP alike.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

STOCK_TEXT_MAX_CHARS = 40
MAX_CODE = 999_999


def code_from_number(value: Any) -> Any:
    """A whole number as a six-digit code; anything else unchanged (validated as text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if not (0 <= value <= MAX_CODE and value == int(value)):
        raise ValueError(f"股票代码是 6 位数字，收到 {value}：请给 6 位代码或股票名称")
    return f"{int(value):06d}"


def short_stock_text(text: str) -> str:
    """A stock named in a few characters; fuzzy matching a long text would take minutes."""
    if len(text.strip()) > STOCK_TEXT_MAX_CHARS:
        raise ValueError(
            f"股票代码或名称最长 {STOCK_TEXT_MAX_CHARS} 个字，收到 {len(text)} 个字：请只给代码或名称"
        )
    return text


StockText = Annotated[str, BeforeValidator(code_from_number), AfterValidator(short_stock_text)]
