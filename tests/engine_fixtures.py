"""Hand-built panels: one target stock with a chosen shape among quiet filler stocks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wyckoff.engine.panel import Panel

DAYS = 320


def series(*pieces: tuple[int, float]) -> np.ndarray:
    """Closes from (days, daily return) pieces, starting at 10."""
    returns = np.concatenate([np.full(days, r) for days, r in pieces])
    return 10 * np.cumprod(1 + returns)


def make_panel(
    close: np.ndarray,
    volume: np.ndarray | None = None,
    *,
    high: np.ndarray | None = None,
    low: np.ndarray | None = None,
    open_: np.ndarray | None = None,
    bench: np.ndarray | None = None,
    fillers: int = 60,
    filler_drift: float = 0.0,
    market_cap: float = 2e10,
    name: str = "目标股份",
    seed: int = 7,
    dates: np.ndarray | None = None,
) -> Panel:
    """Column 0 is the target ('600000'); the rest are random walks around `filler_drift`.
    Dates are consecutive calendar days unless given."""
    rng = np.random.default_rng(seed)
    days = len(close)
    filler_close = 10 * np.cumprod(1 + rng.normal(filler_drift, 0.015, (days, fillers)), axis=0)
    closes = np.column_stack([close, filler_close])
    volumes = np.column_stack(
        [
            volume if volume is not None else np.full(days, 1e7),
            rng.uniform(0.8e7, 1.2e7, (days, fillers)),
        ]
    )
    highs = closes * 1.01 if high is None else np.column_stack([high, filler_close * 1.01])
    lows = closes * 0.99 if low is None else np.column_stack([low, filler_close * 0.99])
    opens = (
        np.vstack([closes[:1], closes[:-1]])
        if open_ is None
        else np.column_stack([open_, np.vstack([filler_close[:1], filler_close[:-1]])])
    )
    codes = ["600000"] + [f"{600001 + i:06d}" for i in range(fillers)]
    stocks = pd.DataFrame(
        {
            "name": [name] + [f"填充{i}" for i in range(fillers)],
            "industry": ["银行"] + [["电子", "医药生物", "汽车"][i % 3] for i in range(fillers)],
            "board": "main",
            "is_st": False,
            "market_cap": [market_cap] + [2e10] * fillers,
            "list_date": "20200101",
        },
        index=codes,
    )
    if dates is None:
        dates = np.arange(np.datetime64("2025-01-01"), np.datetime64("2025-01-01") + days).astype(
            "datetime64[D]"
        )
    bench = np.full(days, 3000.0) if bench is None else bench
    return Panel(
        dates,
        codes,
        opens,
        highs,
        lows,
        closes,
        volumes,
        closes * volumes,
        stocks,
        {"000001.SH": bench, "399006.SZ": bench},
        "test",
    )


def chatty(seconds: float) -> str:
    """Prints like baostock does, then sleeps (for the isolation tests; runs in a child)."""
    import time

    print("login success!")
    time.sleep(seconds)
    return "done"


def bars_panel(
    close: list[list[float]],
    *,
    open_: list[list[float]] | None = None,
    high: list[list[float]] | None = None,
    low: list[list[float]] | None = None,
    codes: tuple[str, ...] = ("600000",),
    board: str = "main",
    is_st: bool = False,
    list_status: str = "L",
    start: str = "2025-03-03",
) -> Panel:
    """A few days of bars for a few stocks, rows = days (NaN = no bar: suspended or gone).
    Open, high and low default to the close: one-price bars."""
    closes = np.array(close, dtype=float)
    days = len(closes)
    stocks = pd.DataFrame(
        {
            "name": [f"股票{i}" for i in range(len(codes))],
            "industry": "银行",
            "board": board,
            "is_st": is_st,
            "market_cap": 1e10,
            "list_status": list_status,
        },
        index=list(codes),
    )
    dates = np.arange(np.datetime64(start), np.datetime64(start) + days).astype("datetime64[D]")
    return Panel(
        dates,
        list(codes),
        *(closes if a is None else np.array(a, dtype=float) for a in (open_, high, low)),
        closes,
        np.full(closes.shape, 1e6),
        closes * 1e6,
        stocks,
        {},
        "test",
    )
