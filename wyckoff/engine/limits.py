"""A-share daily price limits as the exchange computes them.

The limit prices of a day are the reference price (the previous close, ex-rights adjusted)
x (1 ± the board's limit), rounded half up to the cent, on prices as traded; a price is at
the limit when it equals that price in cents. A fraction-of-a-move test misses cent-rounded
limits of low prices (an ST stock at 2.05 is limited down at 1.95, -4.88%).

New listings trade without a limit on their first days: five on STAR, on ChiNext since its
registration reform and on the main board since full registration; one (the first) on the
main board and ChiNext before, where the first day's band (+44% / -36%) is measured from the
offer price, which the store does not hold.
"""

from __future__ import annotations

import numpy as np

from wyckoff.engine.panel import Panel, last_close, traded_ratio
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig, limit_pct


def limit_prices(reference_cents: int, limit: float) -> tuple[int, int]:
    """(limit-down, limit-up) in cents for a reference price in cents and a limit fraction."""
    percent = round(limit * 100)
    down = (reference_cents * (100 - percent) + 50) // 100
    up = (reference_cents * (100 + percent) + 50) // 100
    return down, up


def free_days(board: str, list_date: str, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    """How many first trading days of a listing have no daily limit we can apply."""
    registered = {
        "star": True,
        "chinext": list_date >= cfg.chinext_20pct_from,
        "main": list_date >= cfg.main_registration_from,
    }.get(board, False)
    return cfg.new_listing_free_days if registered else 1


def listing_day(p: Panel, t: int, listed: str) -> int:
    """Day t's number among the market's trading days since `listed` (1 = the listing day)."""
    return t - int(np.searchsorted(p.dates, np.datetime64(listed))) + 1


def limit_cents(
    p: Panel, t: int, j: int, cfg: EngineConfig = DEFAULT_CONFIG
) -> tuple[int, int] | None:
    """Day t's (limit-down, limit-up) in cents as traded, or None when no limit applies (a
    new listing's first days) or none is known (no earlier close)."""
    previous = last_close(p, t - 1, j) if t > 0 else np.nan
    if np.isnan(previous):
        return None
    stock = p.stocks.iloc[j]
    board = stock["board"] if isinstance(stock["board"], str) else "main"
    listed = p.stock_list.listing_date(j)
    if listed and listing_day(p, t, listed) <= free_days(board, listed, cfg):
        return None
    is_st = stock["is_st"] if p.is_st is None else p.is_st[t, j]  # ST as of that day
    reference = to_cents(previous * traded_ratio(p, t, j))
    return limit_prices(reference, limit_pct(board, bool(is_st), p.dates[t], cfg))


def to_cents(price: float) -> int:
    return int(round(price * 100))


def at_limit(
    p: Panel, t: int, j: int, price: float, direction: int, cfg: EngineConfig = DEFAULT_CONFIG
) -> bool:
    """Whether the qfq `price` on day t is at its up (+1) or down (-1) limit price."""
    limits = None if np.isnan(price) else limit_cents(p, t, j, cfg)
    if limits is None:
        return False
    traded = to_cents(price * traded_ratio(p, t, j))
    return traded >= limits[1] if direction > 0 else traded <= limits[0]


def locked(p: Panel, t: int, j: int, direction: int, cfg: EngineConfig = DEFAULT_CONFIG) -> bool:
    """A one-price bar at the daily limit: nobody could trade into (up) or out of (down) it."""
    o, h, lo, c = p.open[t, j], p.high[t, j], p.low[t, j], p.close[t, j]
    return bool(o == h == lo == c) and at_limit(p, t, j, c, direction, cfg)


def cannot_buy(p: Panel, t: int, j: int, cfg: EngineConfig = DEFAULT_CONFIG) -> bool:
    """No open (suspended), or an open at the up limit: the queue there rarely fills."""
    return bool(np.isnan(p.open[t, j])) or at_limit(p, t, j, p.open[t, j], +1, cfg)
