"""Where a market's minute bars come from: the demo market's synthetic paths, baostock
(5-minute history), akshare (1-minute, recent days) or tushare's stk_mins (1-minute, when
the token has that permission). Vendor calls run with a hard timeout; a failure is one
sentence (SourceError) and nothing is stored."""

from __future__ import annotations

from datetime import date

import pandas as pd

from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.minute_bars import MinuteFeedError, MinuteFetch
from wyckoff.engine.sources.base import run_isolated

FETCH_TIMEOUT_S = 30.0


def minute_fetch(
    daily: MarketStore, tushare_token: str | None = None, timeout_s: float = FETCH_TIMEOUT_S
) -> MinuteFetch:
    """The minute fetch of `daily`'s source."""
    if daily.source == "demo":
        return lambda code, day: _demo_day(daily, code, day)
    if daily.source == "baostock":
        return lambda code, day: _baostock_day(code, day, timeout_s)
    if daily.source == "akshare":
        return lambda code, day: _akshare_day(code, day, timeout_s)
    if daily.source == "tushare" and tushare_token:
        return lambda code, day: _tushare_day(tushare_token, code, day, timeout_s)
    raise MinuteFeedError(
        f"数据源 {daily.source} 没有分钟线：用 `wyckoff data use baostock`（5 分钟）或 akshare"
        "（1 分钟）取分时，或 `wyckoff data use demo` 体验。"
    )


def _demo_day(daily: MarketStore, code: str, day: date) -> tuple[pd.DataFrame, int]:
    from wyckoff.engine.demo_minutes import demo_minute_bars

    rows = daily.query_df(
        "SELECT open, high, low, close, volume, amount FROM bars WHERE code = ? AND date = ?",
        [code, day],
    )
    if rows.empty:
        return pd.DataFrame(), 1
    return demo_minute_bars(code, day, rows.iloc[0].to_dict()), 1


def _baostock_day(code: str, day: date, timeout_s: float) -> tuple[pd.DataFrame, int]:
    from wyckoff.engine.sources.baostock import (
        MINUTE_FREQ,
        baostock_minute_frame,
        baostock_minutes,
    )

    rows = run_isolated(baostock_minutes, (code, day.isoformat()), timeout_s)
    return baostock_minute_frame(rows), MINUTE_FREQ


def _akshare_day(code: str, day: date, timeout_s: float) -> tuple[pd.DataFrame, int]:
    from wyckoff.engine.sources.akshare import akshare_minute_frame, akshare_minutes

    return akshare_minute_frame(
        run_isolated(akshare_minutes, (code, day.isoformat()), timeout_s)
    ), 1


def _tushare_day(token: str, code: str, day: date, timeout_s: float) -> tuple[pd.DataFrame, int]:
    from wyckoff.engine.sources.tushare import (
        TushareClient,
        tushare_minute_frame,
        tushare_minutes,
    )

    client = TushareClient(token, timeout_s=timeout_s)
    try:
        return tushare_minute_frame(tushare_minutes(client, code, day.isoformat())), 1
    finally:
        client.close()
