"""What a portfolio change must satisfy: a listed stock, the held position a text names,
share counts, prices, amounts and dates. Shared by the position commands and the ledger."""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from wyckoff.agents.stock_lookup import StockNotResolved, normalize, resolve_stock
from wyckoff.cli.output import local_today
from wyckoff.errors import UsageError
from wyckoff.ledger.money import MAX_CENTS, check_cents, check_shares

if TYPE_CHECKING:
    from wyckoff.portfolio_store import Position

MAX_AMOUNT = MAX_CENTS / 100  # prices and cash: beyond any real account
FIRST_TRADING_DAY = date(1990, 12, 19)  # the Shanghai exchange opened


class PortfolioError(UsageError):
    """A change that cannot be made; nothing was changed."""


def stock_names() -> dict[str, str]:
    """code -> name from the bundled A-share list."""
    from wyckoff.engine.demo import stock_list

    listing = stock_list()
    return dict(zip(listing["code"], listing["name"], strict=True))


def validate_stock(stock: str, name: str | None) -> tuple[str, str]:
    """The code and name of the stock `stock` (a code or a name) names in the A-share list."""
    from wyckoff.engine.demo import stock_list

    code = resolve_stock(stock_list(), stock)
    listed_name = stock_names()[code]
    if name and normalize(name) != normalize(listed_name):
        raise PortfolioError(f"代码与名称不符：{code} 是 {listed_name}，不是 {name}。")
    return code, listed_name


def held_code(positions: list[dict[str, Any]], stock: str) -> str:
    """The code of the held position `stock` names, by the same rules as everywhere else
    (code, `600519.SH`, full-width digits, name, unique fragment); else PortfolioError."""
    import pandas as pd  # type: ignore[import-untyped]

    held = pd.DataFrame(positions, columns=["code", "name"])
    try:
        return resolve_stock(held, stock)
    except StockNotResolved as failure:
        if not failure.candidates:
            raise PortfolioError(
                f"持仓里没有 {stock}。用 `wyckoff portfolio list` 查看持仓。"
            ) from None
        listed = "".join(f"\n  {line}" for line in failure.candidates)
        raise PortfolioError(
            f"持仓里没有唯一对应 {stock} 的股票，请用代码或完整名称指定其中一只：{listed}"
        ) from None


def validate_shares(shares: int) -> None:
    """A held position's share count: any positive whole number, since 送股 remainders and the
    STAR market's steps of 1 leave odd lots (order sizes are checked on fills, in lots.py)."""
    if shares <= 0:
        raise PortfolioError(f"股数必须是正整数，收到 {shares}。")
    check_shares(shares)


def validate_basis(shares: int, cost_price: float) -> None:
    """What a position cost in all (shares x cost price) stays within a real account."""
    check_cents(round(shares * cost_price * 100), "持仓成本（股数 × 成本价）")


def validate_price(price: float, label: str) -> None:
    if not price > 0:
        raise PortfolioError(f"{label}必须大于 0，收到 {price}。")
    validate_amount(price, label)


def validate_amount(amount: float, label: str) -> None:
    """A finite amount of a believable size (no nan, inf or 1e300)."""
    if not math.isfinite(amount) or abs(amount) > MAX_AMOUNT:
        raise PortfolioError(f"{label}必须是不超过 {MAX_AMOUNT:.0e} 的有限数字，收到 {amount}。")


def validate_date(text: str, label: str = "买入日期") -> str:
    cleaned = text.replace("-", "").strip()
    try:
        day = datetime.strptime(cleaned, "%Y%m%d").date()
    except ValueError:
        raise PortfolioError(f"{label} {text} 不是有效日期，请用 YYYYMMDD。") from None
    if day > local_today():
        raise PortfolioError(f"{label} {text} 在未来。")
    if day < FIRST_TRADING_DAY:
        raise PortfolioError(f"{label} {text} 早于 A 股开市（1990-12-19），请检查。")
    return cleaned


def with_basis(held: Position, shares: int, cost_cents: int) -> Position:
    """The position with `shares` costing `cost_cents` in all (average cost shown to 0.0001)."""
    return {
        **held,
        "shares": shares,
        "cost_cents": cost_cents,
        "cost_price": round(cost_cents / shares / 100, 4),
    }
