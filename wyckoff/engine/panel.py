"""The market panel: daily bars as arrays shaped (days, stocks), plus stock metadata and
index closes. Everything in the engine reads a Panel; nothing in it does I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

BAR_FIELDS = ("open", "high", "low", "close", "volume", "amount")


@dataclass
class Panel:
    dates: np.ndarray  # datetime64[D], ascending, length T
    codes: list[str]  # length N
    open: np.ndarray  # (T, N) qfq-adjusted; NaN when not trading
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray  # shares
    amount: np.ndarray  # CNY
    stocks: pd.DataFrame  # index code: name, industry, board, is_st, market_cap, list_date
    index_close: dict[str, np.ndarray] = field(default_factory=dict)  # code -> (T,)
    source: str = "unknown"

    @property
    def as_of(self) -> str:
        return str(self.dates[-1]) if len(self.dates) else ""

    @property
    def shape(self) -> tuple[int, int]:
        return self.close.shape

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

    def upto(self, t: int) -> Panel:
        """The panel as it was known at day index t (no data after it)."""
        return Panel(
            self.dates[: t + 1],
            self.codes,
            *(getattr(self, name)[: t + 1] for name in BAR_FIELDS),
            stocks=self.stocks,
            index_close={k: v[: t + 1] for k, v in self.index_close.items()},
            source=self.source,
        )

    def stock_frame(self, code: str, days: int | None = None) -> pd.DataFrame:
        """One stock's bars as a frame (for display and price queries)."""
        j = self.column(code)
        frame = pd.DataFrame(
            {name: getattr(self, name)[:, j] for name in BAR_FIELDS},
            index=pd.to_datetime(self.dates),
        )
        frame = frame.dropna(subset=["close"])
        return frame.tail(days) if days else frame


def panel_from_long(bars, stocks: pd.DataFrame, index_bars: pd.DataFrame, source: str) -> Panel:
    """Build a Panel from long columns: bars(code, date, open..amount) as a frame or a dict of
    arrays (codes may be ints, dates day numbers), stocks indexed by code, index_bars(code,
    date, close). Only the unique codes and dates are converted: per-row conversion is slow."""
    date_index, dates = pd.factorize(np.asarray(bars["date"]), sort=True)
    code_index, codes = pd.factorize(np.asarray(bars["code"]), sort=True)
    arrays = {}
    for name in BAR_FIELDS:
        grid = np.full((len(dates), len(codes)), np.nan)
        grid[date_index, code_index] = np.asarray(bars[name], dtype=np.float64)
        arrays[name] = grid
    dates = np.asarray(dates).astype("datetime64[D]")
    codes = [c if isinstance(c, str) else f"{int(c):06d}" for c in codes]
    index_close = {}
    if len(index_bars):
        wide_index = index_bars.pivot(index="date", columns="code", values="close")
        wide_index.index = wide_index.index.values.astype("datetime64[D]")
        wide_index = wide_index.reindex(dates).ffill()
        index_close = {
            code: wide_index[code].to_numpy(dtype=np.float64) for code in wide_index.columns
        }
    return Panel(
        dates, codes, **arrays, stocks=stocks.reindex(codes), index_close=index_close, source=source
    )
