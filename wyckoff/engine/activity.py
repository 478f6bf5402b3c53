"""The market's activity per day: the yardstick the triggers judge a stock's volume by."""

from __future__ import annotations

import numpy as np

from wyckoff.engine.thresholds import MIN_VALID_SHARE

MIN_MARKET_STOCKS = 30  # fewer stocks with a volume ratio that day: no market to compare with


def market_activity(volume: np.ndarray, n: int = 60) -> np.ndarray:
    """Per day, the market's median volume ratio: each stock's volume over its mean of the
    n days before, the median over stocks (1.0 where fewer than MIN_MARKET_STOCKS have one).
    The baseline is as long as the longest volume window a trigger reads, so a lull or a
    surge lasting weeks stays the market's, not every stock's. Point in time: day d reads
    only days <= d."""
    activity = np.ones(volume.shape[0])
    if volume.shape[0] <= n:
        return activity
    traded = ~np.isnan(volume)
    sums = np.cumsum(np.where(traded, volume, 0.0), axis=0)
    counts = np.cumsum(traded, axis=0)
    prior_sum = sums[n - 1 : -1] - np.vstack([np.zeros((1, volume.shape[1])), sums[: -n - 1]])
    prior_count = counts[n - 1 : -1] - np.vstack([np.zeros((1, volume.shape[1])), counts[: -n - 1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(
            prior_count >= n * MIN_VALID_SHARE, volume[n:] / prior_sum * prior_count, np.nan
        )
    valid = np.sum(~np.isnan(ratio), axis=1)
    ordered = np.sort(np.where(np.isnan(ratio), np.inf, ratio), axis=1)  # NaN sorted last
    rows = np.arange(len(ratio))
    lower, upper = np.maximum(valid - 1, 0) // 2, valid // 2
    with np.errstate(invalid="ignore"):
        median = (ordered[rows, lower] + ordered[rows, upper]) / 2
    enough = valid >= MIN_MARKET_STOCKS
    activity[n:] = np.where(enough & (median > 0), median, 1.0)
    return activity
