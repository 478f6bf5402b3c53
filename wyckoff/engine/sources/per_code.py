"""Sources fetched stock by stock (baostock, akshare): the sync loop over isolated batches,
and the stocks, bars and daily_basic tables built from their normalised columns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.base import Progress, run_isolated
from wyckoff.engine.thresholds import board_of


@dataclass(frozen=True)
class PerCodeSource:
    """A source fetched stock by stock (baostock, akshare). `listing` and `fetch` run in an
    isolated child and return library-shaped rows; `frames` normalises them in the parent."""

    listing: Callable[[str, str], pd.DataFrame]  # (start, end) -> code, name, industry, ...
    fetch: Callable[[list[str], str, str], list]  # (codes, start, end) -> rows per stock
    frames: Callable[[list], tuple[pd.DataFrame, pd.DataFrame]]  # rows -> bars, daily_basic
    indices: Callable[[str, str], pd.DataFrame]  # (start, end) -> index_bars of MAIN_INDICES


def sync_per_code(
    store: MarketStore,
    source: PerCodeSource,
    days: int,
    codes: list[str] | None,
    progress: Progress,
    timeout_s: float = 120,
) -> dict[str, Any]:
    """Raw bars with the exchange's reference prior close (the factors are derived from it,
    see adjustment.py) and per-date facts, fetched per stock in isolated batches of 50. The
    universe includes stocks delisted inside the window."""
    end = date.today()
    start = (end - timedelta(days=int(days * 1.6) + 10)).isoformat()
    progress("股票列表", "", None)
    stocks = run_isolated(source.listing, (start, end.isoformat()), timeout_s)
    if codes:
        stocks = stocks[stocks["code"].isin(codes)]
    store.upsert("stocks", stocks)
    todo = stocks["code"].tolist()
    stored = 0
    for first in range(0, len(todo), 50):
        batch = todo[first : first + 50]
        progress("日线", f"{batch[0]}…", first / max(len(todo), 1))
        bars, basic = source.frames(
            run_isolated(source.fetch, (batch, start, end.isoformat()), timeout_s)
        )
        stored += len(bars)
        store.write({"bars": bars, "daily_basic": basic}, derive_price=True)
    progress("指数", "", None)
    store.upsert("index_bars", run_isolated(source.indices, (start, end.isoformat()), timeout_s))
    return {"rows": stored}


def listing_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The stocks table from code, name, industry, list_date, list_status columns."""
    return frame.assign(
        board=[board_of(c) for c in frame["code"]],
        is_st=frame["name"].str.upper().str.contains("ST"),
        market_cap=None,
    ).reset_index(drop=True)


def daily_frames(frame: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from normalised columns: code, date, raw open..close, pre_close
    (the exchange's reference price), volume (shares), amount (CNY), turnover_rate (%),
    is_st and bonus_ratio (or absent). Days without trading are dropped (a suspended day has
    no bar). The float cap is derived per day: close x volume / turnover rate."""
    if frame is None or frame.empty:
        return pd.DataFrame(), pd.DataFrame()
    frame = typed_frame(frame)
    frame = frame[(frame["volume"] > 0) & (frame["close"] > 0)]
    columns = ["code", "date", "open", "high", "low", "close", "pre_close", "volume", "amount"]
    bars = frame[columns + (["bonus_ratio"] if "bonus_ratio" in frame else [])]
    with np.errstate(invalid="ignore", divide="ignore"):
        float_mv = frame["close"] * frame["volume"] / (frame["turnover_rate"] / 100)
    basic = pd.DataFrame(
        {
            "code": frame["code"],
            "date": frame["date"],
            "total_mv": np.nan,
            "float_mv": float_mv.where(frame["turnover_rate"] > 0),
            "turnover_rate": frame["turnover_rate"],
            "is_st": frame.get("is_st"),
        }
    )
    return bars.reset_index(drop=True), basic.reset_index(drop=True)


NUMERIC = ("open", "high", "low", "close", "pre_close", "volume", "amount", "turnover_rate")


def typed_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Numbers and dates from library values; empty strings become NaN."""
    frame = frame.copy()
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["date"] = pd.to_datetime(frame["date"])
    return frame
