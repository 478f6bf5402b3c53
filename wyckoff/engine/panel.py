"""The market panel: daily bars as arrays shaped (days, stocks), plus stock metadata and
index closes. Everything in the engine reads a Panel; nothing in it does I/O.

Prices and volumes are qfq-adjusted (volume on today's share basis, so a split does not
read as a volume surge). Per-date facts sit beside them as (days, stocks) arrays, so every
rule sees the value of that date: the unadjusted close (absolute-price rules), market cap,
turnover rate and the ST flag."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from wyckoff.engine.activity import market_activity
from wyckoff.engine.stock_list import StockList

if TYPE_CHECKING:
    import pandas as pd

BAR_FIELDS = ("open", "high", "low", "close", "volume", "amount")
DAILY_FIELDS = ("raw_close", "market_cap", "turnover_rate", "is_st")  # Panel's per-date arrays
PER_DATE = ("raw_close", "total_mv", "float_mv", "turnover_rate", "is_st")  # stored columns


@dataclass
class Panel:
    dates: np.ndarray  # datetime64[D], ascending, length T
    codes: list[str]  # length N
    open: np.ndarray  # (T, N) qfq-adjusted; NaN when not trading
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray  # shares, adjusted like the prices
    amount: np.ndarray  # CNY
    stock_list: StockList  # (or a frame indexed by code) name, industry, board, is_st, ...
    index_close: dict[str, np.ndarray] = field(default_factory=dict)  # code -> (T,)
    source: str = "unknown"
    raw_close: np.ndarray | None = None  # (T, N) the price as traded that day
    market_cap: np.ndarray | None = None  # (T, N) CNY; NaN when unknown
    turnover_rate: np.ndarray | None = None  # (T, N) fraction of float shares traded
    is_st: np.ndarray | None = None  # (T, N) bool
    caveats: list[str] = field(default_factory=list)  # data weaknesses, in Chinese
    market_activity: np.ndarray | None = None  # (T,) see activity.market_activity

    def __post_init__(self) -> None:
        """Fill per-date facts the source did not provide (see `fill_daily_facts`)."""
        if not isinstance(self.stock_list, StockList):
            self.stock_list = StockList.from_frame(self.stock_list)
        fill_daily_facts(self)

    @property
    def stocks(self) -> pd.DataFrame:
        """The stock list as a pandas frame indexed by code (see `StockList`)."""
        return self.stock_list.frame()

    @stocks.setter
    def stocks(self, frame: pd.DataFrame) -> None:
        self.stock_list = StockList.from_frame(frame)

    @property
    def as_of(self) -> str:
        return str(self.dates[-1]) if len(self.dates) else ""

    @property
    def shape(self) -> tuple[int, int]:
        return self.close.shape

    @property
    def relative_volume(self) -> np.ndarray:
        """Volume in units of the market's activity that day (`market_activity`): the
        triggers judge a stock's volume against the market's own, so a market-wide surge or
        a quiet pre-holiday day is no stock's event."""
        cached = self.__dict__.get("_relative_volume")
        if cached is None:
            cached = self.volume / self.activity()[:, None]
            self.__dict__["_relative_volume"] = cached
        return cached

    def activity(self) -> np.ndarray:
        """The market's activity per day (`market_activity`), computed once per panel."""
        if self.market_activity is None:
            self.market_activity = market_activity(self.volume)
        return self.market_activity

    def memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """A value computed once per panel: a cross-section of day t that every one-stock
        diagnosis of that day reads (the market-wide RPS ranks, the 退市整理 flags)."""
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def column(self, code: str) -> int:
        return self._positions()[code]

    def _positions(self) -> dict[str, int]:
        cache = self.__dict__.get("_position_cache")
        if cache is None:
            cache = {code: i for i, code in enumerate(self.codes)}
            self.__dict__["_position_cache"] = cache
        return cache

    def has(self, code: str) -> bool:
        return code in self._positions()

    def stock_value(self, code: str, column: str):
        """One fact of a stock from the stock list (its name, industry, board, ...)."""
        return self.stock_list.value(self.column(code), column)

    def upto(self, t: int) -> Panel:
        """The panel as it was known at day index t (no data after it)."""
        activity = self.market_activity
        return Panel(
            self.dates[: t + 1],
            self.codes,
            *(getattr(self, name)[: t + 1] for name in BAR_FIELDS),
            stock_list=self.stock_list,
            index_close={k: v[: t + 1] for k, v in self.index_close.items()},
            source=self.source,
            **{name: getattr(self, name)[: t + 1] for name in DAILY_FIELDS},
            caveats=self.caveats,
            market_activity=None if activity is None else activity[: t + 1],
        )

    def single(self, code: str) -> Panel:
        """One stock's columns of every array, judged against this panel's market (its
        activity), so a one-stock diagnosis reads exactly what the funnel reads. The columns
        are copied into plain arrays: a slice of the disk cache's memmap would pay numpy's
        memmap bookkeeping on every one of the diagnosis's many small steps."""
        j = self.column(code)

        def column(name: str) -> np.ndarray:
            return np.array(getattr(self, name)[:, j : j + 1])

        return Panel(
            self.dates,
            [code],
            *(column(name) for name in BAR_FIELDS),
            stock_list=self.stock_list.row(j),
            index_close=self.index_close,
            source=self.source,
            **{name: column(name) for name in DAILY_FIELDS},
            caveats=self.caveats,
            market_activity=self.activity(),
        )

    def stock_frame(self, code: str, days: int | None = None) -> pd.DataFrame:
        """One stock's bars as a frame (for display and price queries)."""
        import pandas as pd

        j = self.column(code)
        frame = pd.DataFrame(
            {name: getattr(self, name)[:, j] for name in BAR_FIELDS},
            index=pd.to_datetime(self.dates),
        )
        frame = frame.dropna(subset=["close"])
        return frame.tail(days) if days else frame


def panel_from_long(
    bars, stocks: pd.DataFrame, index_bars: pd.DataFrame, source: str, caveats: list[str] = ()
) -> Panel:
    """Build a Panel from long columns: bars(code, date, open..amount) as a frame or a dict of
    arrays (codes may be ints, dates day numbers), stocks indexed by code, index_bars(code,
    date, close). Bars may also carry the per-date columns raw_close, total_mv, float_mv
    (CNY), turnover_rate (%) and is_st; what they lack is derived (`derived_facts`). Only
    the unique codes and dates are converted: per-row conversion is slow."""
    import pandas as pd

    date_index, dates = pd.factorize(np.asarray(bars["date"]), sort=True)
    code_index, codes = pd.factorize(np.asarray(bars["code"]), sort=True)

    def grid(name: str) -> np.ndarray:
        values = np.full((len(dates), len(codes)), np.nan)
        values[date_index, code_index] = np.asarray(bars[name], dtype=np.float64)
        return values

    arrays = {name: grid(name) for name in BAR_FIELDS}
    stocks = stocks.reindex([c if isinstance(c, str) else f"{int(c):06d}" for c in codes])
    daily = _daily_facts(arrays, stocks, {name: grid(name) for name in PER_DATE if name in bars})
    dates = np.asarray(dates).astype("datetime64[D]")
    index_close = {}
    if len(index_bars):
        wide_index = index_bars.pivot(index="date", columns="code", values="close")
        wide_index.index = wide_index.index.values.astype("datetime64[D]")
        wide_index = wide_index.reindex(dates).ffill()
        index_close = {
            code: wide_index[code].to_numpy(dtype=np.float64) for code in wide_index.columns
        }
    return Panel(
        dates,
        list(stocks.index),
        **arrays,
        stock_list=StockList.from_frame(stocks),
        index_close=index_close,
        source=source,
        **daily,
        caveats=list(caveats),
    )


def _daily_facts(
    arrays: dict[str, np.ndarray], stocks: pd.DataFrame, given: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Per-date facts from the stored columns; a gap takes the last known cap of the stock,
    else what `derived_facts` implies. Market cap is the total cap, else the float cap."""
    import pandas as pd

    derived = derived_facts(arrays["close"], arrays["amount"], stocks, None)
    cap = derived["market_cap"]
    if "total_mv" in given:
        stored = np.where(np.isnan(given["total_mv"]), given["float_mv"], given["total_mv"])
        stored = pd.DataFrame(stored).ffill().to_numpy()
        cap = np.where(np.isnan(stored), cap, stored)
    with np.errstate(invalid="ignore", divide="ignore"):
        turnover = arrays["amount"] / cap
    if "turnover_rate" in given:
        turnover = np.where(
            np.isnan(given["turnover_rate"]), turnover, given["turnover_rate"] / 100
        )
    is_st = derived["is_st"]
    if "is_st" in given:
        is_st = np.where(np.isnan(given["is_st"]), is_st, given["is_st"] > 0)
    raw_close = given.get("raw_close", arrays["close"])
    return {"raw_close": raw_close, "market_cap": cap, "turnover_rate": turnover, "is_st": is_st}


def fill_daily_facts(p: Panel) -> None:
    """Per-date facts the panel was built without, derived from what it has (see
    `derived_facts`); facts given as arrays are kept as they are."""
    derived = None
    for name in DAILY_FIELDS:
        if getattr(p, name) is None:
            derived = derived or derived_facts(p.close, p.amount, p.stocks, p.market_cap)
            setattr(p, name, derived[name])


def derived_facts(
    close: np.ndarray, amount: np.ndarray, stocks: pd.DataFrame, market_cap: np.ndarray | None
) -> dict[str, np.ndarray]:
    """What a source without per-date facts implies: raw_close = the close (no adjustment
    known); is_st = the listed flag or an ST name; market cap = the stock list's cap scaled
    by the close (constant share count); turnover rate = amount / that day's market cap."""
    names = stocks["name"].fillna("").astype(str).str.upper().str.contains("ST")
    listed_st = stocks["is_st"].fillna(False).astype(bool).to_numpy() | names.to_numpy()
    latest_cap = stocks["market_cap"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled_cap = close * (latest_cap / last_valid(close))
        cap = scaled_cap if market_cap is None else market_cap
        return {
            "raw_close": close,
            "market_cap": scaled_cap,
            "turnover_rate": amount / cap,
            "is_st": np.broadcast_to(listed_st, close.shape),
        }


def last_valid(a: np.ndarray) -> np.ndarray:
    """Each column's last non-NaN value (NaN for an empty column)."""
    if a.shape[0] == 0:
        return np.full(a.shape[1], np.nan)
    valid = ~np.isnan(a)
    rows = a.shape[0] - 1 - np.argmax(valid[::-1], axis=0)
    return np.where(valid.any(axis=0), a[rows, np.arange(a.shape[1])], np.nan)


def last_close(p: Panel, t: int, j: int) -> float:
    """The last close at or before day t: a suspended stock keeps its last price."""
    if not np.isnan(p.close[t, j]):
        return float(p.close[t, j])
    traded = np.flatnonzero(~np.isnan(p.close[: t + 1, j]))
    return float(p.close[traded[-1], j]) if len(traded) else np.nan


def traded_ratio(p: Panel, t: int, j: int) -> float:
    """Price as traded / qfq price on day t (on the last traded day when suspended): qfq
    prices are relative to today, so across a split or dividend they differ from what was
    paid then."""
    if p.raw_close is None:
        return 1.0
    traded = np.flatnonzero(~np.isnan(p.close[: t + 1, j]))
    if not len(traded):
        return 1.0
    k = traded[-1]
    return float(p.raw_close[k, j] / p.close[k, j])
