"""A fill's price against the stock's bar of that day, as traded (the store's bars are
unadjusted; the panel's qfq prices are not what was paid). A price outside the day's
low-high range is refused: it also lies outside the daily limit band, since every traded
price does. A day the store has no bar for (suspended, or not synced yet) cannot be checked,
so the fill is recorded only when the user insists (`force`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff.errors import UsageError
from wyckoff.ledger.days import day_text
from wyckoff.ledger.money import price_text

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore


def check_fill_price(
    market: MarketStore | None, code: str, name: str, mills: int, day: str, force: bool
) -> str | None:
    """None when the price is within the day's range (or there is no market store to check
    against); a note when the day has no bar and `force`; else UsageError."""
    from wyckoff.engine.marks import traded_range

    if market is None:
        return None
    traded = traded_range(market, code, day)
    if traded is None:
        missing = f"行情库没有 {code} {name} {day_text(day)} 的日线（{_why_no_bar(market, day)}）"
        if force:
            return f"{missing}，成交价 {price_text(mills)} 未核对。"
        raise UsageError(
            f"{missing}，无法核对成交价 {price_text(mills)}；请先 `wyckoff data sync`，"
            "或确认价格无误后加 --force 记录。"
        )
    low, high = (round(price * 1000) for price in traded)
    if not low <= mills <= high:
        raise UsageError(
            f"成交价 {price_text(mills)} 不在 {code} {name} {day_text(day)} 的成交区间"
            f" {price_text(low)}–{price_text(high)}（未复权）内；{_what_to_check(market)}"
        )
    return None


def _what_to_check(market: MarketStore) -> str:
    """The demo's prices are synthetic: a real fill is checked against the real market."""
    if market.source == "demo":
        return (
            "当前数据源是演示数据，区间是合成的价格；记录真实成交请先 `wyckoff data use baostock`"
            "（或 tushare、akshare）并 `wyckoff data sync`。"
        )
    return "请检查价格和成交日期。"


def _why_no_bar(market: MarketStore, day: str) -> str:
    from wyckoff.engine.marks import stored_span

    first, last = stored_span(market)
    if first is None or last is None:
        return "行情库是空的"
    if not first <= day <= last:
        return f"行情库只有 {day_text(first)} 至 {day_text(last)} 的行情"
    return "当天可能停牌"
