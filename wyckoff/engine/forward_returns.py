"""What happened after a day: the forward return of a stock bought at the next open, the
same for the market and the CSI 300, and its best and worst moments on the way.

One measure for everything that asks "was it right": for something said as of day t (a
signal, a screen's pick, a piece of advice), the stock is entered at the open of t+1 and
held h trading days: `close(t+h) / open(t+1) - 1` on adjusted (qfq) prices, so dividends
and splits do not count as moves. A stock suspended on t+h counts at its last close, and a
delisted one at its final close (its real outcome). Entry at t+1 is impossible when the
stock has no open that day (suspended) or, for a buy, opens at its up limit (the queue
there rarely fills); for a sell, when it opens at its down limit.

The market over the same days is the equal-weight mean of the same return over every stock
that opened on t+1; the CSI 300 (000300.SH) is measured close(t) to close(t+h), since the
panel holds index closes only. All returns are fractions (0.012 = +1.2%).

These are the scorecard's per-item forms (plus what only advice needs: a sell's entry, the
best and worst moves, the stop); event_study.measure computes the same returns vectorised
over many events, and a test holds the two to one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from wyckoff.engine.benchmark import CSI300
from wyckoff.engine.limits import at_limit
from wyckoff.engine.panel import Panel, last_close, last_valid, traded_ratio

HORIZONS = (1, 5, 20)
EXCURSION_DAYS = 20  # the best (MFE) and worst (MAE) moves are measured over these days
Side = Literal["buy", "sell"]


@dataclass(frozen=True)
class Entry:
    """The entry at the open of t+1: its day index and qfq price, or why there is none."""

    t: int
    price: float | None  # qfq open; None when unfillable
    traded_price: float | None  # the same price as traded that day
    unfillable: str | None  # one Chinese phrase: why the open could not be traded


def day_after(p: Panel, as_of: str, last: int | None = None) -> int | None:
    """The index of the first trading day after `as_of` (YYYY-MM-DD) up to `last` (default:
    the panel's last day); None when it has not come yet."""
    t = int(np.searchsorted(p.dates, np.datetime64(as_of), side="right"))
    end = len(p.dates) - 1 if last is None else last
    return t if t <= end else None


def entry_at_open(p: Panel, t_entry: int, j: int, side: Side) -> Entry:
    """Stock j entered at the open of day `t_entry` (t+1), or why it could not be."""
    day = str(p.dates[t_entry])
    price = float(p.open[t_entry, j])
    if np.isnan(price):
        return Entry(t_entry, None, None, f"{day} 停牌，无开盘价")
    if side == "buy" and at_limit(p, t_entry, j, price, +1):
        return Entry(t_entry, None, None, f"{day} 涨停开盘，买不进")
    if side == "sell" and at_limit(p, t_entry, j, price, -1):
        return Entry(t_entry, None, None, f"{day} 跌停开盘，卖不出")
    return Entry(t_entry, price, round(price * traded_ratio(p, t_entry, j), 3), None)


def forward_return(p: Panel, t: int, j: int, h: int) -> float | None:
    """close(t+h) / open(t+1) - 1 for stock j signalled on day t; None when day t+h is not
    in the panel or the stock had no open on t+1."""
    if t + h >= len(p.dates):
        return None
    entry = float(p.open[t + 1, j])
    if np.isnan(entry):
        return None
    return last_close(p, t + h, j) / entry - 1  # suspended or delisted: its last close


def market_return(p: Panel, t: int, h: int) -> float | None:
    """The equal-weight mean of `forward_return` over every stock that opened on t+1 (once
    per panel, day and horizon: every event of a day shares it)."""
    if t + h >= len(p.dates):
        return None
    mean: float | None = p.memo(("market_return", t, h), lambda: _market_return(p, t, h))
    return mean


def _market_return(p: Panel, t: int, h: int) -> float | None:
    opened = ~np.isnan(p.open[t + 1])
    if not opened.any():
        return None
    # a stock that opened on t+1 closed that day too: its last close is within t+1..t+h
    closes = last_valid(p.close[t + 1 : t + h + 1, opened])
    return float(np.nanmean(closes / p.open[t + 1, opened] - 1))


def index_return(p: Panel, t: int, h: int, code: str = CSI300[0]) -> float | None:
    """The index's close(t+h) / close(t) - 1; None when the store lacks either close."""
    series = p.index_close.get(code)
    if series is None or t + h >= len(p.dates):
        return None
    start, end = series[t], series[t + h]
    if np.isnan(start) or np.isnan(end):
        return None
    return float(end / start - 1)


def excursions(p: Panel, t: int, j: int, days: int = EXCURSION_DAYS) -> tuple[float, float] | None:
    """(MFE, MAE): the highest high and the lowest low of t+1..t+days against the open of
    t+1, as fractions; None until day t+days is in the panel."""
    if t + days >= len(p.dates) or np.isnan(p.open[t + 1, j]):
        return None
    entry = p.open[t + 1, j]
    highs, lows = p.high[t + 1 : t + days + 1, j], p.low[t + 1 : t + days + 1, j]
    if np.isnan(highs).all():
        return 0.0, 0.0
    return float(np.nanmax(highs) / entry - 1), float(np.nanmin(lows) / entry - 1)


def stop_hit(p: Panel, t: int, j: int, stop: float, days: int = EXCURSION_DAYS) -> bool | None:
    """Whether a low of t+1..t+days reached `stop` (a price as traded on day t); None until
    day t+days is in the panel."""
    if t + days >= len(p.dates):
        return None
    stop_qfq = stop / traded_ratio(p, t, j)
    lows = p.low[t + 1 : t + days + 1, j]
    return bool((lows[~np.isnan(lows)] <= stop_qfq + 1e-9).any())
