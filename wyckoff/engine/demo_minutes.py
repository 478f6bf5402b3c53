"""Synthetic one-minute paths for the demo market that add up exactly to its daily bars.

For one daily bar: the first minute opens at the day's open, the last closes at its close, one
minute touches the high and another the low, and between these anchors the price wanders
(a random walk pinned to the anchors, kept inside the day's range, in cents). Volume (in lots
of 100 shares) is dealt out over the 240 minutes with the U shape of a real session, and the
amount in whole yuan in proportion to each minute's volume x price, the last yuan of
rounding going to the busiest minute: the minutes' sums equal the day's volume and amount.
The path depends only on the stock, the date and the daily bar, so it is the same every time.
"""

from __future__ import annotations

import zlib
from datetime import date

import numpy as np
import pandas as pd

from wyckoff.engine.minute_bars import COLUMNS, session_slots

MINUTES = 240


def demo_minute_bars(code: str, day: date, bar: dict[str, float]) -> pd.DataFrame:
    """The day's 240 one-minute bars (COLUMNS) for a daily bar with open, high, low, close,
    volume (shares) and amount (CNY)."""
    rng = np.random.default_rng(zlib.crc32(f"{code}{day:%Y%m%d}".encode()))
    closes = _price_path(rng, bar["open"], bar["high"], bar["low"], bar["close"])
    opens = np.concatenate([[bar["open"]], closes[:-1]])
    wick = np.round(np.abs(rng.normal(0, 0.0008, (2, MINUTES))) * closes, 2)
    highs = np.minimum(np.round(np.maximum(opens, closes) + wick[0], 2), bar["high"])
    lows = np.maximum(np.round(np.minimum(opens, closes) - wick[1], 2), bar["low"])
    volume = _volumes(rng, bar["volume"])
    return pd.DataFrame(
        {
            "ts": session_slots(day, 1),
            "open": opens,
            "high": highs,
            "low": lows,
            "close": closes,
            "volume": volume,
            "amount": _amounts(volume, (highs + lows + closes) / 3, bar["amount"]),
        }
    )[COLUMNS]


def _price_path(rng, open_: float, high: float, low: float, close: float) -> np.ndarray:
    """Minute closes from open to close through high and low, in cents, within [low, high]."""
    at_high, at_low = rng.choice(np.arange(1, MINUTES - 1), 2, replace=False)
    anchors = sorted([(0, open_), (int(at_high), high), (int(at_low), low), (MINUTES - 1, close)])
    where = np.array([i for i, _ in anchors])
    walk = np.cumsum(rng.normal(0, 1, MINUTES))
    pinned = walk - np.interp(np.arange(MINUTES), where, walk[where])  # zero at the anchors
    spread = max(high - low, 0.01) * 0.15
    path = np.interp(np.arange(MINUTES), where, [p for _, p in anchors]) + pinned * spread / 4
    path = np.clip(np.round(path, 2), low, high)
    for i, price in anchors[1:]:  # the first anchor is the open, not a minute close
        path[i] = price
    return path


def _volumes(rng, day_volume: float) -> np.ndarray:
    """Shares per minute, whole lots, heavier at the open and into the close."""
    t = np.linspace(0, 1, MINUTES)
    shape = 1 + 2.5 * (1 - t) ** 8 + 1.5 * t**10
    weights = shape * rng.lognormal(0, 0.5, MINUTES)
    lots = rng.multinomial(int(round(day_volume / 100)), weights / weights.sum())
    volume = lots * 100.0
    volume[-1] += day_volume - volume.sum()  # a day volume not in whole lots keeps its rest
    return volume


def _amounts(volume: np.ndarray, price: np.ndarray, day_amount: float) -> np.ndarray:
    raw = volume * price
    if raw.sum() <= 0:
        amounts = np.zeros(MINUTES)
        amounts[-1] = day_amount
        return amounts
    amounts = np.floor(raw * (day_amount / raw.sum()))
    amounts[int(np.argmax(amounts))] += day_amount - amounts.sum()
    return amounts
