"""The event study of the engine's signals (docs/research.md): every trigger and the funnel's
picks, each event on day t entered at the open of t+1 and measured h trading days on.

Two steps. `detect_events` runs the funnel point in time on every signal day (the costly
part, cached and split across workers by engine/event_cache.py); `measure` turns events into
outcomes over the panel as it is now, vectorised over events, and `summarize` into the
statistics per signal: mean return, excess over the equal-weight market and the CSI 300,
hit rate and a t-statistic clustered by date. Pure: a Panel in, arrays and dicts out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np

from wyckoff.engine.benchmark import CSI300
from wyckoff.engine.funnel import run_funnel
from wyckoff.engine.indicators import percentile_rank
from wyckoff.engine.limits import cannot_buy
from wyckoff.engine.panel import Panel
from wyckoff.engine.regime import market_regime
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig
from wyckoff.engine.triggers import TRIGGER_LABELS, TRIGGERS
from wyckoff.ledger.fees import BrokerFees, fill_fees

SCREEN_TOP = 20  # `screen` shows this many candidates
SIGNALS = (*TRIGGERS, "funnel", f"screen_top{SCREEN_TOP}")
SIGNAL_LABELS = {
    **TRIGGER_LABELS,
    "funnel": "漏斗终选（第四层）",
    f"screen_top{SCREEN_TOP}": f"screen 前 {SCREEN_TOP}",
}
LAW_BASE_CENTS = 100_000_000  # a 1,000,000-yuan trade: the law's rates to the cent
NO_COMMISSION = BrokerFees(commission_rate=Decimal(0), min_commission_cents=0)
REGIMES = ("RISK_ON", "NEUTRAL", "RISK_OFF", "BEAR_REBOUND", "PANIC_REPAIR", "CRASH")
# An open this far above the previous close may be at an up limit (the narrowest is ST's 5%,
# which cent rounding makes as little as ~4.9%): only those get the exact limit check.
NEAR_LIMIT = 0.04


@dataclass
class Events:
    """Events as stored: which signal (index into SIGNALS), the signal date and the code;
    and the regime of every signal day computed."""

    signal: np.ndarray  # int8
    date: np.ndarray  # datetime64[D]
    code: np.ndarray  # str
    days: np.ndarray  # datetime64[D]: every signal day computed (events or not)
    regimes: np.ndarray  # int8 per day: index into REGIMES

    @classmethod
    def empty(cls) -> Events:
        return cls(
            np.zeros(0, np.int8),
            np.zeros(0, "datetime64[D]"),
            np.zeros(0, "U6"),
            np.zeros(0, "datetime64[D]"),
            np.zeros(0, np.int8),
        )

    @classmethod
    def joined(cls, parts: list[Events]) -> Events:
        """Parts of disjoint days as one, in day order."""
        if not parts:
            return cls.empty()
        days = np.concatenate([part.days for part in parts])
        order = np.argsort(days, kind="stable")
        events = [np.concatenate([getattr(p, name) for p in parts]) for name in ("signal", "date")]
        codes = np.concatenate([p.code.astype("U6") for p in parts])
        by_date = np.argsort(events[1], kind="stable")
        regimes = np.concatenate([part.regimes for part in parts])
        return cls(
            events[0][by_date], events[1][by_date], codes[by_date], days[order], regimes[order]
        )

    def between(self, first: np.datetime64, last: np.datetime64) -> Events:
        """The events and days from `first` to `last`."""
        keep = (self.date >= first) & (self.date <= last)
        day_keep = (self.days >= first) & (self.days <= last)
        return Events(
            self.signal[keep],
            self.date[keep],
            self.code[keep],
            self.days[day_keep],
            self.regimes[day_keep],
        )


def day_events(p: Panel, t: int, cfg: EngineConfig) -> dict[str, np.ndarray]:
    """Columns of each signal's events on day t, the funnel seeing only data up to t: a
    trigger's fires (capped, under its Layer-4 rules) among the tradable universe (Layer 1),
    the funnel's final picks (Layer 4) and the first SCREEN_TOP of `screen`'s ranking."""
    result = run_funnel(p, t, cfg)
    found = {
        name: np.flatnonzero(mask & result.layer1) for name, mask in result.all_triggers.items()
    }
    found["funnel"] = np.flatnonzero(result.layer4)
    found[f"screen_top{SCREEN_TOP}"] = np.array(result.ranked(SCREEN_TOP), dtype=int)
    return found


def detect_events(
    p: Panel,
    start_t: int,
    end_t: int,
    cfg: EngineConfig = DEFAULT_CONFIG,
    progress: Callable[[int], None] | None = None,
) -> Events:
    """Every signal's events on days start_t..end_t, with each day's regime."""
    signals, dates, codes, regimes = [], [], [], []
    for t in range(start_t, end_t + 1):
        for k, columns in enumerate(day_events(p, t, cfg).values()):
            signals.append(np.full(len(columns), k, np.int8))
            dates.append(np.full(len(columns), p.dates[t]))
            codes.append(np.array(p.codes, dtype="U6")[columns])
        regimes.append(REGIMES.index(market_regime(p, t, cfg)["regime"]))
        if progress:
            progress(t)
    if not signals:
        return Events.empty()
    return Events(
        np.concatenate(signals),
        np.concatenate(dates).astype("datetime64[D]"),
        np.concatenate(codes),
        p.dates[start_t : end_t + 1].astype("datetime64[D]"),
        np.array(regimes, dtype=np.int8),
    )


@dataclass
class Outcomes:
    """Per event: its day and column in the panel, whether it could be bought at t+1's open,
    the entry price; per horizon (rows in the order of `horizons`) the exit day, the
    return and the market's and the CSI 300's over the same days (NaN: not known yet)."""

    t: np.ndarray
    column: np.ndarray
    buyable: np.ndarray  # bool; False also when t+1 is not in the data yet
    entered: np.ndarray  # bool: t+1 is in the data
    entry_price: np.ndarray
    horizons: tuple[int, ...]
    exit_t: np.ndarray  # (H, events) int, -1 when not reached
    returns: np.ndarray  # (H, events)
    market: np.ndarray
    csi300: np.ndarray


def measure(p: Panel, events: Events, horizons: tuple[int, ...], cfg: EngineConfig) -> Outcomes:
    """Each event's outcome on the panel: bought at the open of t+1 unless suspended or at
    the up limit there (`cannot_buy`); sold at the close of t+h, or, suspended or delisted
    before then, at its last close up to t+h."""
    t = np.searchsorted(p.dates, events.date)
    column = _columns(p, events.code)
    last = len(p.dates) - 1
    entered = t + 1 <= last
    entry_t = np.minimum(t + 1, last)
    entry = np.where(entered, p.open[entry_t, column], np.nan)
    buyable = entered & ~np.isnan(entry) & ~_at_up_limit(p, entry_t, column, entered, cfg)
    last_bar = _last_bar_rows(p.close)
    exits, returns, market, csi = [], [], [], []
    for h in horizons:
        reached = t + h <= last
        exit_row = np.where(reached, last_bar[np.minimum(t + h, last), column], -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ret = p.close[np.maximum(exit_row, 0), column] / entry - 1
        ok = buyable & reached & (exit_row > t)
        exits.append(np.where(ok, exit_row, -1))
        returns.append(np.where(ok, ret, np.nan))
        market.append(np.where(ok, market_returns(p, h, last_bar)[t], np.nan))
        csi.append(np.where(ok, index_returns(p, CSI300[0], h)[t], np.nan))
    return Outcomes(
        t,
        column,
        buyable,
        entered,
        entry,
        tuple(horizons),
        *map(np.array, (exits, returns, market, csi)),
    )


def _columns(p: Panel, codes: np.ndarray) -> np.ndarray:
    positions = {code: j for j, code in enumerate(p.codes)}
    return np.array([positions[str(code)] for code in codes], dtype=int)


def _at_up_limit(
    p: Panel, entry_t: np.ndarray, column: np.ndarray, entered: np.ndarray, cfg: EngineConfig
) -> np.ndarray:
    """Whether each entry open is at the up limit; only opens NEAR_LIMIT above the previous
    close are checked exactly (limits.cannot_buy), the rest cannot be."""
    previous = p.close[_last_bar_rows(p.close)[np.maximum(entry_t - 1, 0), column], column]
    with np.errstate(invalid="ignore", divide="ignore"):
        near = entered & (p.open[entry_t, column] / previous - 1 >= NEAR_LIMIT)
    limited = np.zeros(len(column), dtype=bool)
    for k in np.flatnonzero(near):
        limited[k] = cannot_buy(p, int(entry_t[k]), int(column[k]), cfg)
    return limited


def _last_bar_rows(close: np.ndarray) -> np.ndarray:
    """(T, N) the row of each stock's last close at or before each day (0 before its first)."""
    rows = np.where(np.isnan(close), 0, np.arange(len(close))[:, None]).astype(np.int32)
    return np.maximum.accumulate(rows, axis=0)


def market_returns(p: Panel, h: int, last_bar: np.ndarray) -> np.ndarray:
    """(T,) the equal-weight market for an event on day t: the mean over every stock with an
    open on t+1 of its close at t+h (its last close up to then) / that open - 1; NaN when
    t+h is not in the data."""
    days = len(p.dates)
    out = np.full(days, np.nan)
    columns = np.arange(p.close.shape[1])
    for t in range(days - h):
        opens = p.open[t + 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            ret = p.close[last_bar[t + h], columns] / opens - 1
        out[t] = np.nanmean(ret) if np.any(~np.isnan(ret)) else np.nan
    return out


def index_returns(p: Panel, code: str, h: int) -> np.ndarray:
    """(T,) the index from the close of t to the close of t+h (the panel keeps only index
    closes); NaN without the index or past the data."""
    out = np.full(len(p.dates), np.nan)
    series = p.index_close.get(code)
    if series is not None and len(series) > h:
        with np.errstate(invalid="ignore", divide="ignore"):
            out[: len(series) - h] = series[h:] / series[:-h] - 1
    return out


def round_trip_cost(cfg: EngineConfig, days: np.ndarray) -> float:
    """The mean round trip of events on `days`, as a fraction: commission on both sides
    (no minimum), and stamp duty on the sale and the transfer fee on both sides at the rates
    in force on each day (ledger/fees.py)."""
    if not len(days):
        return 0.0
    dated = [_law_round_trip(d) for d in days.astype("datetime64[D]").tolist()]
    return round(2 * cfg.commission + float(np.mean(dated)), 6)


def _law_round_trip(day: date) -> float:
    """Stamp duty on a sale plus the transfer fee on a buy and a sale, on `day`."""
    fees = fill_fees("sell", LAW_BASE_CENTS, day, NO_COMMISSION)
    transfer = fill_fees("buy", LAW_BASE_CENTS, day, NO_COMMISSION).transfer_fee
    return (fees.stamp_duty + fees.transfer_fee + transfer) / LAW_BASE_CENTS


def clustered_t(excess: np.ndarray, dates: np.ndarray) -> tuple[float | None, int]:
    """The t-statistic of excess returns clustered by date: each date's mean, then the mean
    of those over their standard deviation / sqrt(dates); None under two dates or no spread."""
    if not len(excess):
        return None, 0
    unique, index = np.unique(dates, return_inverse=True)
    per_date = np.bincount(index, weights=excess) / np.bincount(index)
    if len(unique) < 2:
        return None, len(unique)
    sd = float(np.std(per_date, ddof=1))
    if sd == 0:
        return None, len(unique)
    return float(np.mean(per_date) / (sd / np.sqrt(len(unique)))), len(unique)


def horizon_stats(
    ret: np.ndarray, market: np.ndarray, csi: np.ndarray, dates: np.ndarray, cost: float
) -> dict[str, Any]:
    """The statistics of one signal at one horizon over its complete events."""
    done = ~np.isnan(ret)
    ret, market, csi, dates = ret[done], market[done], csi[done], dates[done]
    excess = ret - market
    t_stat, n_dates = clustered_t(excess, dates)
    known_csi = ~np.isnan(csi)
    return {
        "complete": int(done.sum()),
        "dates": n_dates,
        "mean_return": _mean(ret),
        "mean_return_after_cost": None if not len(ret) else round(float(np.mean(ret)) - cost, 6),
        "excess_vs_market": _mean(excess),
        "excess_vs_csi300": _mean(ret[known_csi] - csi[known_csi]) if known_csi.any() else None,
        "hit_rate": _mean((excess > 0).astype(float)),
        "t_stat": None if t_stat is None else round(t_stat, 3),
    }


def _mean(values: np.ndarray) -> float | None:
    return round(float(np.mean(values)), 6) if len(values) else None


def summarize(
    events: Events, outcomes: Outcomes, cfg: EngineConfig, keep: np.ndarray | None = None
) -> list[dict[str, Any]]:
    """One record per signal (in SIGNALS order) over the events `keep` selects (all)."""
    keep = np.ones(len(events.signal), dtype=bool) if keep is None else keep
    records = []
    for k, name in enumerate(SIGNALS):
        mine = keep & (events.signal == k)
        cost = round_trip_cost(cfg, events.date[mine])
        record: dict[str, Any] = {
            "signal": name,
            "label": SIGNAL_LABELS[name],
            "events": int(mine.sum()),
            "unbuyable": int((mine & outcomes.entered & ~outcomes.buyable).sum()),
            "not_yet_entered": int((mine & ~outcomes.entered).sum()),
            "round_trip_cost": cost,
        }
        for row, h in enumerate(outcomes.horizons):
            record[str(h)] = horizon_stats(
                outcomes.returns[row][mine],
                outcomes.market[row][mine],
                outcomes.csi300[row][mine],
                events.date[mine],
                cost,
            )
        records.append(record)
    return records


def daily_share(p: Panel, events: Events, limit: float) -> list[dict[str, Any]]:
    """Per signal: the largest share of the day's traded stocks it fired on, and the share
    of signal days on which it fired on more than `limit` of them."""
    t = np.searchsorted(p.dates, events.days)
    traded = np.count_nonzero(~np.isnan(p.close[t]), axis=1)
    day_of = np.searchsorted(events.days, events.date)
    rows = []
    for k, name in enumerate(SIGNALS):
        counts = np.bincount(day_of[events.signal == k], minlength=len(events.days))
        share = counts / np.maximum(traded, 1)
        rows.append(
            {
                "signal": name,
                "max_daily_share": round(float(share.max()), 4) if len(share) else None,
                "days_over_limit_share": round(float(np.mean(share > limit)), 4)
                if len(share)
                else None,
            }
        )
    return rows


def group_keys(p: Panel, events: Events, by: str, cap: np.ndarray | None = None) -> np.ndarray:
    """Each event's group: its signal date's year, the regime on its signal day, or its
    stock's market-cap third among the stocks traded that day (`cap` (T, N); 小/中/大)."""
    if by == "year":
        return events.date.astype("datetime64[Y]").astype(str)
    if by == "regime":
        day = np.searchsorted(events.days, events.date)
        names: np.ndarray = np.array(REGIMES)[events.regimes[day]]
        return names
    if cap is None:
        raise ValueError("no market caps")
    t, column = np.searchsorted(p.dates, events.date), _columns(p, events.code)
    thirds = np.full(len(t), "未知", dtype=object)
    for day in np.unique(t):
        ranks = percentile_rank(np.asarray(cap[day], dtype=float))
        mine = t == day
        rank = ranks[column[mine]]
        thirds[mine] = np.where(
            np.isnan(rank),
            "未知",
            np.where(rank <= 100 / 3, "小", np.where(rank <= 200 / 3, "中", "大")),
        )
    return thirds.astype(str)


def grouped(
    events: Events, outcomes: Outcomes, cfg: EngineConfig, keys: np.ndarray
) -> list[dict[str, Any]]:
    """`summarize` per group, groups in sorted order."""
    return [
        {"group": str(key), "signals": summarize(events, outcomes, cfg, keys == key)}
        for key in sorted(set(keys.tolist()))
    ]
