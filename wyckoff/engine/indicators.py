"""Indicators evaluated at one day index t, for every stock at once.

Each function reads only rows <= t, so the same code serves the live screen and the
point-in-time backtest without look-ahead. Arrays are (days, stocks); results are (stocks,).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np

from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import BENCHMARK, MIN_VALID_SHARE, EngineConfig


def window(a: np.ndarray, t: int, n: int) -> np.ndarray:
    return a[max(t - n + 1, 0) : t + 1]


def nan_reduce(func, values: np.ndarray, axis: int = 0) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return func(values, axis=axis)


def nan_quantile(values: np.ndarray, q: float) -> np.ndarray:
    """Per-column quantile ignoring NaN (linear interpolation), vectorised over columns;
    numpy's nanquantile loops over columns in Python and is ~30x slower here."""
    valid = np.sum(~np.isnan(values), axis=0)
    ordered = np.sort(np.where(np.isnan(values), np.inf, values), axis=0)
    position = np.maximum(valid - 1, 0) * q
    lower = np.floor(position).astype(int)
    upper = np.minimum(lower + 1, np.maximum(valid - 1, 0))
    low_values = np.take_along_axis(ordered, lower[None, :], axis=0)[0]
    high_values = np.take_along_axis(ordered, upper[None, :], axis=0)[0]
    with np.errstate(invalid="ignore"):
        result = low_values + (high_values - low_values) * (position - lower)
    return np.where(valid > 0, result, np.nan)


def wmean(a: np.ndarray, t: int, n: int) -> np.ndarray:
    """Mean of the last n rows up to t; NaN when too few valid days."""
    w = window(a, t, n)
    valid = np.sum(~np.isnan(w), axis=0)
    result = nan_reduce(np.nanmean, w)
    return np.where(valid >= max(1, int(n * MIN_VALID_SHARE)), result, np.nan)


def wmax(a: np.ndarray, t: int, n: int) -> np.ndarray:
    return nan_reduce(np.nanmax, window(a, t, n))


def wmin(a: np.ndarray, t: int, n: int) -> np.ndarray:
    return nan_reduce(np.nanmin, window(a, t, n))


def at(a: np.ndarray, t: int) -> np.ndarray:
    """Row t, or NaN when t is before the panel starts."""
    if t < 0:
        return np.full(a.shape[1], np.nan)
    return a[t]


def ret(close: np.ndarray, t: int, n: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return close[t] / at(close, t - n) - 1


def percentile_rank(values: np.ndarray) -> np.ndarray:
    """Cross-sectional percentile (0-100) among valid values; NaN stays NaN."""
    valid = ~np.isnan(values)
    result = np.full(values.shape, np.nan)
    count = int(valid.sum())
    if count == 0:
        return result
    order = values[valid].argsort(kind="stable")
    ranks = np.empty(count)
    ranks[order] = np.arange(1, count + 1)
    result[valid] = ranks / count * 100
    return result


def true_range(panel: Panel, t: int, n: int) -> np.ndarray:
    high, low = window(panel.high, t, n), window(panel.low, t, n)
    prev_close = window(panel.close, t - 1, n) if t >= 1 else np.full_like(high, np.nan)
    if prev_close.shape[0] < high.shape[0]:
        prev_close = np.vstack(
            [np.full((high.shape[0] - prev_close.shape[0], high.shape[1]), np.nan), prev_close]
        )
    with np.errstate(invalid="ignore"):
        return np.fmax(high - low, np.fmax(np.abs(high - prev_close), np.abs(low - prev_close)))


def atr(panel: Panel, t: int, n: int) -> np.ndarray:
    return nan_reduce(np.nanmean, true_range(panel, t, n))


def slope_pct_per_day(close: np.ndarray, t: int, n: int = 10) -> np.ndarray:
    """Least-squares slope of the cumulative return (in %) over the last n days."""
    w = window(close, t, n)
    if w.shape[0] < n:
        return np.full(close.shape[1], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = (w / w[0] - 1) * 100
    x = np.arange(n, dtype=float) - (n - 1) / 2
    return (x[:, None] * y).sum(axis=0) / (x**2).sum()


def index_return(panel: Panel, code: str, t: int, n: int) -> float:
    series = panel.index_close.get(code)
    if series is None or t - n < 0 or np.isnan(series[t - n]):
        return float("nan")
    return float(series[t] / series[t - n] - 1)


def features_at(panel: Panel, t: int, cfg: EngineConfig) -> SimpleNamespace:
    """Every per-stock indicator the funnel and diagnosis need, at day index t."""
    c = panel.close[t]
    f = SimpleNamespace(t=t, close=c)
    f.ma20, f.ma50, f.ma200 = (
        wmean(panel.close, t, 20),
        wmean(panel.close, t, 50),
        wmean(panel.close, t, 200),
    )
    f.ma20_prev5 = wmean(panel.close, t - 5, 20) if t >= 5 else np.full_like(c, np.nan)
    for n in (1, 3, 5, 10, 20, 50, 60, 120):
        setattr(f, f"ret{n}", ret(panel.close, t, n))
    f.rps50, f.rps120 = percentile_rank(f.ret50), percentile_rank(f.ret120)
    f.bench3, f.bench10 = (
        index_return(panel, BENCHMARK, t, 3),
        index_return(panel, BENCHMARK, t, 10),
    )
    f.rs10 = (f.ret10 - (0.0 if np.isnan(f.bench10) else f.bench10)) * 100
    f.rs3 = (f.ret3 - (0.0 if np.isnan(f.bench3) else f.bench3)) * 100
    with np.errstate(invalid="ignore", divide="ignore"):
        f.bias200 = c / f.ma200 - 1
    f.atr14, f.atr20 = atr(panel, t, 14), atr(panel, t, 20)
    with np.errstate(invalid="ignore", divide="ignore"):
        f.atr20_pct = f.atr20 / c
    f.amount20 = wmean(panel.amount, t, 20)
    amount_window = window(panel.amount, t, 20)
    f.amount_median20 = nan_reduce(np.nanmedian, amount_window)
    f.amount_days_above = nan_reduce(np.nanmean, (amount_window >= cfg.min_turnover).astype(float))
    f.amount_skew20 = _skew(amount_window)
    f.volume20 = wmean(panel.volume, t, 20)
    f.volume5 = wmean(panel.volume, t, 5)
    f.volume3 = wmean(panel.volume, t, 3)
    f.volume_prior60 = wmean(panel.volume, t - 20, 60) if t >= 20 else np.full_like(c, np.nan)
    f.volume_prior120 = wmean(panel.volume, t - 20, 120) if t >= 20 else np.full_like(c, np.nan)
    f.volume60 = wmean(panel.volume, t, 60)
    f.low250, f.high250 = wmin(panel.low, t, 250), wmax(panel.high, t, 250)
    f.low60, f.high60 = wmin(panel.low, t, 60), wmax(panel.high, t, 60)
    f.close_high60 = wmax(panel.close, t, 60)
    with np.errstate(invalid="ignore", divide="ignore"):
        f.range60 = f.high60 / f.low60 - 1
        f.drawdown60 = 1 - c / f.close_high60
        f.max_drawdown60 = _max_drawdown(window(panel.close, t, 60))
        f.ma_gap = np.abs(f.ma50 - f.ma200) / f.ma200
    f.slope10 = slope_pct_per_day(panel.close, t, 10)
    f.market_cap, f.is_st, f.raw_close = panel.market_cap[t], panel.is_st[t], panel.raw_close[t]
    f.board = np.array(panel.stock_list.texts("board", missing="main"), dtype=object)
    return f


def _skew(w: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", category=RuntimeWarning)
        mean = np.nanmean(w, axis=0)
        std = np.nanstd(w, axis=0)
        return np.nanmean((w - mean) ** 3, axis=0) / std**3


def _max_drawdown(w: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        running_peak = np.fmax.accumulate(np.where(np.isnan(w), -np.inf, w), axis=0)
        drawdowns = 1 - w / running_peak
    return nan_reduce(np.nanmax, drawdowns)
