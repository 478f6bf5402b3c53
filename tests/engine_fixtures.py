"""Hand-built panels: one target stock with a chosen shape among quiet filler stocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from wyckoff.engine.market_store import MarketStore
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


def sos_then(next_bar: str, suspended_days: int = 0) -> Panel:
    """The target fires SOS on day DAYS - 1; day DAYS is tradable ("open"), locked limit-up
    ("locked") or opens at the up limit and trades below it ("limit_open"); then the target
    may be suspended for `suspended_days` more days (no bars) while the market goes on."""
    close = np.full(DAYS + 1, 10.0) * (1 + 0.002 * np.sin(np.arange(DAYS + 1)))
    close[-2] = round(close[-3] * 1.07, 2)
    volume = np.full(DAYS + 1, 1e7)
    volume[-2] = 4e7
    up_limit = np.floor(close[-2] * 110 + 0.5) / 100  # the exchange's limit price
    close[-1] = {"locked": up_limit, "limit_open": round(close[-2] * 1.06, 2)}.get(
        next_bar, round(close[-2] * 1.02, 2)
    )
    open_ = np.concatenate([[close[0]], close[:-1]])
    open_[-1] = {"locked": up_limit, "limit_open": up_limit}.get(
        next_bar, round(close[-2] * 1.01, 2)
    )
    high, low = np.maximum(open_, close) * 1.01, np.minimum(open_, close) * 0.99
    if next_bar == "locked":
        high[-1] = low[-1] = close[-1]
    if next_bar == "limit_open":
        high[-1] = open_[-1]
    gap = np.full(suspended_days, np.nan)
    close, volume, high, low, open_ = (
        np.concatenate([a, gap]) for a in (close, volume, high, low, open_)
    )
    return make_panel(close, volume, high=high, low=low, open_=open_)


def store_from_panel(
    home: Path, panel: Panel, source: str = "tushare", adj_factor: np.ndarray | None = None
) -> MarketStore:
    """Write a hand-built (qfq) panel into a market store, as a sync would: raw prices and
    volumes with their adjustment factor (T, N; default 1.0 throughout)."""
    days, n = panel.close.shape
    factor = np.ones((days, n)) if adj_factor is None else adj_factor
    to_raw = factor[-1] / factor  # qfq price x this = the price as traded
    bars = pd.DataFrame(
        {
            "code": np.tile(np.array(panel.codes, dtype=object), days),
            "date": np.repeat(panel.dates, n),
            **{
                name: (getattr(panel, name) * to_raw).reshape(-1)
                for name in ("open", "high", "low", "close")
            },
            "volume": (panel.volume / to_raw).reshape(-1),
            "amount": panel.amount.reshape(-1),
            "adj_factor": factor.reshape(-1),
        }
    )
    store = MarketStore.for_source(home, source)
    store.upsert("bars", bars.dropna(subset=["close"]))  # NaN = no bar (suspended)
    store.upsert("stocks", panel.stocks.reset_index(names="code"))
    index = panel.index_close["000001.SH"]
    store.upsert(
        "index_bars",
        pd.DataFrame(
            {
                "code": "000001.SH",
                "date": panel.dates,
                **dict.fromkeys(("open", "high", "low", "close"), index),
                "volume": 1.0,
                "amount": 1.0,
            }
        ),
    )
    return store


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
    list_date: str = "20100104",
    dates: list[str] | None = None,
) -> Panel:
    """A few days of bars for a few stocks, rows = days (NaN = no bar: suspended or gone),
    on consecutive calendar days from `start` (or on `dates`). Open, high and low default to
    the close: one-price bars."""
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
            "list_date": list_date,
        },
        index=list(codes),
    )
    dates = (
        np.array(dates, dtype="datetime64[D]")
        if dates
        else np.arange(np.datetime64(start), np.datetime64(start) + days).astype("datetime64[D]")
    )
    traded = ~np.isnan(closes)
    stocks["last_trade_date"] = [  # as a store knows it: the last bar of each stock
        str(dates[np.flatnonzero(traded[:, j])[-1]]) if traded[:, j].any() else None
        for j in range(len(codes))
    ]
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


# --- a baostock-shaped market (for the no-token sync path; runs in the sync's child) --------

BAOSTOCK_STOCKS = 150
SPLIT_CODE, SUSPENDED_CODE, DELISTED_CODE = "000006", "000008", "000010"


def _baostock_market() -> dict[str, pd.DataFrame]:
    """The demo market's first stocks as the ground truth behind the fixture rows."""
    from wyckoff.engine.demo import build_demo_market

    return build_demo_market(days=DAYS, limit=BAOSTOCK_STOCKS)


def _symbol(code: str) -> str:
    return f"{'sh' if code.startswith('6') else 'sz'}.{code}"


def baostock_listing_rows(start: str, end: str):
    """What query_stock_basic and query_stock_industry return (rows of strings), through
    the adapter's normalisation; an index row and a long-delisted stock must be left out."""
    from wyckoff.engine.sources.baostock import baostock_listing

    market = _baostock_market()
    stocks, bars = market["stocks"], market["bars"]
    last_day = str(bars["date"].max().date())
    basics = [["sh.000001", "上证综合指数", "1991-07-15", "", "2", "1"]]
    basics += [["sz.000013", "*ST石化A", "1992-05-06", "2004-09-20", "1", "0"]]
    industries = []
    for code, name, industry in zip(
        stocks["code"], stocks["name"], stocks["industry"], strict=True
    ):
        delisted = code == DELISTED_CODE
        out = str(bars["date"].iloc[-1].date() - pd.Timedelta(days=30)) if delisted else ""
        basics.append([_symbol(code), name, "2001-01-02", out, "1", "0" if delisted else "1"])
        industries.append([last_day, _symbol(code), name, industry, "证监会行业分类"])
    return baostock_listing(basics, industries, start, end)


def baostock_rows(codes: list[str], start: str, end: str) -> list[list[list[str]]]:
    """What query_history_k_data_plus returns per stock: unadjusted rows of
    date,code,open,high,low,close,preclose,volume,amount,turn,tradestatus,isST, every value a
    string. SPLIT_CODE splits 2-for-1 forty days before the end (its reference prior close
    halves), SUSPENDED_CODE is suspended for five days, DELISTED_CODE stops trading 30 days
    early."""
    market = _baostock_market()
    stocks, bars = market["stocks"], market["bars"]
    shares = (stocks["market_cap"] / bars.groupby("code")["close"].last().values).to_numpy()
    share_count = dict(zip(stocks["code"], shares, strict=True))
    st_flag = {
        code: "1" if "ST" in name else "0"
        for code, name in zip(stocks["code"], stocks["name"], strict=True)
    }
    fetched = []
    for code in codes:
        rows = bars[(bars["code"] == code) & (bars["date"] >= start) & (bars["date"] <= end)]
        split_at = len(rows) - 40 if code == SPLIT_CODE else len(rows)
        raw, previous_close = [], None
        for i, bar in enumerate(rows.itertuples()):
            day = str(bar.date.date())
            if code == DELISTED_CODE and bar.date > rows["date"].iloc[-1] - pd.Timedelta(days=30):
                break
            factor = 2.0 if i >= split_at else 1.0
            price = [bar.open / factor, bar.high / factor, bar.low / factor, bar.close / factor]
            volume = bar.volume * factor
            turn = bar.volume / share_count[code] * 100
            traded = not (code == SUSPENDED_CODE and len(rows) - 60 <= i < len(rows) - 55)
            preclose = f"{previous_close / factor:.4f}" if previous_close else ""
            # A suspended day repeats the last close; the reference price stays on it.
            values = [f"{v:.4f}" for v in price] if traded else [preclose] * 4
            previous_close = bar.close if traded else previous_close
            raw.append(
                [day, _symbol(code), *values, preclose]
                + (
                    [f"{volume:.0f}", f"{bar.amount:.4f}", f"{turn:.6f}", "1"]
                    if traded
                    else ["0", "", "", "0"]
                )
                + [st_flag[code]]
            )
        fetched.append(raw)
    return fetched


def baostock_index_rows(start: str, end: str):
    """What query_history_k_data_plus returns for the six main indices, normalised."""
    from wyckoff.engine.sources.baostock import baostock_index_frame

    index_bars = _baostock_market()["index_bars"]
    index_bars = index_bars[(index_bars["date"] >= start) & (index_bars["date"] <= end)]
    return baostock_index_frame(
        {
            code: [
                [
                    str(r.date.date()),
                    f"{code[-2:].lower()}.{code[:6]}",
                    *(f"{v:.4f}" for v in r[3:9]),
                ]
                for r in rows.itertuples()
            ]
            for code, rows in index_bars.groupby("code")
        }
    )
