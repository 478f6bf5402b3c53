"""What one stock's minute path says about its day so far: VWAP, the high and the drop from
it, the last 30 minutes, volume against the same minutes of recent days, 5/15-minute trend,
the volume profile and a 0-100 strength with its parts. Pure functions over minute frames
(columns ts, open, high, low, close, volume, amount; see minute_bars.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

TAIL_WINDOW = timedelta(minutes=30)


@dataclass(frozen=True)
class IntradayFacts:
    as_of: datetime  # the last bar's end
    price: float  # the last bar's close
    prior_close: float
    day_open: float
    day_high: float
    day_low: float
    vwap: float
    day_return_pct: float
    vs_vwap_pct: float  # price vs VWAP
    drop_from_high_pct: float  # >= 0
    range_position: float  # 0 at the day's low, 1 at its high
    last30_return_pct: float
    last30_volume_share: float  # the last 30 minutes' share of the day's volume so far
    volume_vs_recent: float | None  # volume so far / recent days' volume by the same minute
    tail_volume_vs_recent: float | None  # last 30 minutes / the same 30 minutes of recent days
    trend5_pct: float  # the last 5 minutes' return
    trend15_pct: float

    def as_dict(self) -> dict:
        out = asdict(self)
        out["as_of"] = f"{self.as_of:%Y-%m-%d %H:%M}"
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def vwap(bars: pd.DataFrame) -> float:
    """Σ amount / Σ volume; the volume-weighted close where a feed has no amounts."""
    volume = bars["volume"].sum()
    if volume <= 0:
        return float(bars["close"].iloc[-1])
    amount = bars["amount"].sum()
    if amount > 0:
        return float(amount / volume)
    return float((bars["close"] * bars["volume"]).sum() / volume)


def intraday_facts(
    today: pd.DataFrame, prior_close: float, recent: list[pd.DataFrame] | None = None
) -> IntradayFacts:
    """The facts of `today`'s bars so far; `recent` are earlier days' complete bars."""
    as_of = today["ts"].iloc[-1].to_pydatetime()
    price = float(today["close"].iloc[-1])
    high, low = float(today["high"].max()), float(today["low"].min())
    average = vwap(today)
    tail = today[today["ts"] > pd.Timestamp(as_of - TAIL_WINDOW)]
    total = float(today["volume"].sum())
    return IntradayFacts(
        as_of=as_of,
        price=price,
        prior_close=prior_close,
        day_open=float(today["open"].iloc[0]),
        day_high=high,
        day_low=low,
        vwap=average,
        day_return_pct=_pct(price, prior_close),
        vs_vwap_pct=_pct(price, average),
        drop_from_high_pct=-_pct(price, high),
        range_position=(price - low) / (high - low) if high > low else 1.0,
        last30_return_pct=_pct(price, _close_before(today, as_of - TAIL_WINDOW)),
        last30_volume_share=float(tail["volume"].sum()) / total if total > 0 else 0.0,
        volume_vs_recent=_versus(total, [_volume_by(day, as_of) for day in recent or []]),
        tail_volume_vs_recent=_versus(
            float(tail["volume"].sum()),
            [_volume_by(day, as_of) - _volume_by(day, as_of - TAIL_WINDOW) for day in recent or []],
        ),
        trend5_pct=_pct(price, _close_before(today, as_of - timedelta(minutes=5))),
        trend15_pct=_pct(price, _close_before(today, as_of - timedelta(minutes=15))),
    )


def volume_profile(today: pd.DataFrame) -> list[dict]:
    """The day's volume by half hour (bar ends in (start, start+30 min]), as shares of it."""
    total = float(today["volume"].sum()) or 1.0
    buckets = (today["ts"] - pd.Timedelta(seconds=1)).dt.floor("30min")
    grouped = today.groupby(buckets)["volume"].sum()
    return [
        {"from": f"{start:%H:%M}", "share_pct": round(float(v) / total * 100, 1)}
        for start, v in grouped.items()
    ]


def strength(facts: IntradayFacts) -> tuple[int, dict[str, int]]:
    """A 0-100 strength: up to 25 points each for the position against VWAP, the place in the
    day's range, the 15-minute trend and the day's return."""
    parts = {
        "VWAP 位置": _scaled(facts.vs_vwap_pct, -2.0, 2.0),
        "日内区间位置": round(25 * facts.range_position),
        "15 分钟趋势": _scaled(facts.trend15_pct, -1.0, 1.0),
        "当日涨跌": _scaled(facts.day_return_pct, -5.0, 5.0),
    }
    return sum(parts.values()), parts


def _scaled(value: float, low: float, high: float) -> int:
    return round(25 * float(np.clip((value - low) / (high - low), 0, 1)))


def _pct(value: float, base: float) -> float:
    return (value / base - 1) * 100 if base else 0.0


def _close_before(bars: pd.DataFrame, moment: datetime) -> float:
    """The close at `moment` (the last bar ending by then), else the day's open."""
    earlier = bars[bars["ts"] <= pd.Timestamp(moment)]
    return float(earlier["close"].iloc[-1]) if len(earlier) else float(bars["open"].iloc[0])


def _volume_by(day: pd.DataFrame, moment: datetime) -> float:
    """A day's volume up to the same time of day as `moment`."""
    return float(day.loc[day["ts"].dt.time <= moment.time(), "volume"].sum())


def _versus(value: float, references: list[float]) -> float | None:
    usable = [r for r in references if r > 0]
    return value / float(np.mean(usable)) if usable else None
