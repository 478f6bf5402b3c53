"""Layer 4 triggers (ENGINE.md): Spring, LPS, EVR, SOS, compression, trend pullback.

Each returns (fired: bool array, score: float array) for every stock at day index t.
Volume is read relative to the market's activity that day (`Panel.relative_volume`): a
stock's event is volume out of line with the market, not the market's own surge or lull.

`detect_triggers` runs them all and caps each to a share of the day's traded market, the
strongest by its score (docs/engine.md): a test relative to a stock's own past fires on
much of the market at once when the whole market moves alike (a quiet market compresses
everything), and a signal on a large share of the market is no stock's signal.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from wyckoff.engine.calendar import trading_day_after
from wyckoff.engine.indicators import (
    at,
    nan_quantile,
    nan_reduce,
    true_range,
    window,
    wmax,
    wmean,
)
from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import EngineConfig

TRIGGER_LABELS = {
    "spring": "Spring",
    "lps": "LPS",
    "evr": "EVR",
    "sos": "SOS",
    "compression": "波动收敛",
    "pullback": "趋势回踩",
}
TRIGGER_KEYS = {label: key for key, label in TRIGGER_LABELS.items()}


def _nan_false(mask: np.ndarray) -> np.ndarray:
    return np.nan_to_num(mask.astype(float), nan=0.0) > 0


def spring(
    p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig
) -> tuple[np.ndarray, np.ndarray]:
    base = window(p.close, t - 2, 60)
    support = nan_reduce(np.nanmin, base)
    top = nan_reduce(np.nanmax, base)
    with np.errstate(invalid="ignore", divide="ignore"):
        width = top / support - 1
        allowed = np.minimum(np.maximum(0.30, 4 * np.nan_to_num(f.atr20_pct)), cfg.spring_range_cap)
        drift = np.abs(at(p.close, t - 2) / at(p.close, t - 61) - 1)
        pierced = (p.low[t] < support) | (at(p.low, t - 1) < support)
        volume = p.relative_volume
        prior4 = wmean(volume, t - 1, 4)
        volume_ok = (volume[t] >= cfg.spring_volume_prior4 * prior4) & (
            volume[t] >= cfg.spring_volume_prev * at(volume, t - 1)
        )
        fired = (
            (width <= allowed)
            & (drift <= cfg.spring_drift)
            & pierced
            & (p.close[t] > support)
            & volume_ok
        )
        score = (p.close[t] / np.fmin(p.low[t], at(p.low, t - 1)) - 1) * 100
    return _nan_false(fired), score


def lps(p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig) -> tuple[np.ndarray, np.ndarray]:
    """A quiet retest of a rising MA20 after a sign of strength, holding above the range it
    broke: the range is the 60 bars before the last `lps_sos_window` + 3; the sign of strength
    a close above its top on volume in that window; volume is compared by medians, so one
    spike in the prior 60 days does not make an ordinary retest look quiet."""
    n_stocks = p.close.shape[1]
    recent_start = t - 2 - cfg.lps_sos_window
    if recent_start - 60 < 0:
        return np.zeros(n_stocks, dtype=bool), np.full(n_stocks, np.nan)
    volume = p.relative_volume
    low3 = nan_reduce(np.nanmin, window(p.low, t, 3))
    range_top = wmax(p.high, recent_start - 1, 60)
    range_volume = nan_quantile(window(volume, recent_start - 1, 60), 0.5)
    recent = slice(recent_start, t - 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        sign_of_strength = np.any(
            (p.close[recent] > range_top) & (volume[recent] >= cfg.lps_sos_volume * range_volume),
            axis=0,
        )
        holds = low3 >= range_top * (1 - cfg.lps_hold_band)
        near = np.abs(low3 / f.ma20 - 1) <= cfg.lps_ma20_band
        ratio = nan_quantile(window(volume, t, 3), 0.5) / nan_quantile(
            window(volume, t - 3, 60), 0.5
        )
        fired = (
            sign_of_strength
            & holds
            & (p.close[t] >= f.ma20)
            & (f.ma20 > f.ma20_prev5)
            & near
            & (ratio <= cfg.lps_volume_ratio)
        )
    return _nan_false(fired), ratio


def evr(p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig) -> tuple[np.ndarray, np.ndarray]:
    fired = np.zeros(p.close.shape[1], dtype=bool)
    score = np.full(p.close.shape[1], np.nan)
    volume = p.relative_volume
    for e in (t - 1, t):  # bar -2, or -1 (whose next close is not known yet)
        if e < 21:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = volume[e] / wmean(volume, e - 1, 20)
            pct = p.close[e] / p.close[e - 1] - 1
            turnover_rate = p.turnover_rate[e]
            holds = p.close[min(e + 1, t)] >= p.low[e]
            hit = (
                (ratio >= cfg.evr_volume)
                & (np.abs(pct) <= cfg.evr_pct)
                & (turnover_rate >= cfg.evr_turnover_rate)
            )
            hit &= (p.close[t] >= 0.98 * at(p.close, t - 3)) & holds
        hit = _nan_false(hit)
        score = np.where(hit, ratio, score)
        fired |= hit
    return fired, score


def sos(p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        volume = p.relative_volume
        ratio = volume[t] / wmean(volume, t - 1, 60)
        prior_high = wmax(p.high, t - 1, 60)
        ma50_prev = wmean(p.close, t - 1, 50)
        crossed = (p.close[t] > f.ma50) & (at(p.close, t - 1) <= ma50_prev)
        fired = (
            (f.ret1 >= cfg.sos_pct)
            & (ratio >= cfg.sos_volume)
            & ((p.close[t] >= 0.99 * prior_high) | crossed)
        )
    return _nan_false(fired), ratio


def compression(
    p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig
) -> tuple[np.ndarray, np.ndarray]:
    n_stocks = p.close.shape[1]
    if t < 30:
        return np.zeros(n_stocks, dtype=bool), np.full(n_stocks, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        tr_pct = true_range(p, t, 29) / p.close[t - 28 : t + 1]
        atr5 = nan_reduce(np.nanmean, sliding_window_view(tr_pct, 5, axis=0), axis=-1)
        current = atr5[-1]
        threshold = nan_quantile(atr5[-21:-1], cfg.compression_quantile)
        rises = np.sum(np.diff(atr5[-6:], axis=0) > 0, axis=0)
        volume = p.relative_volume
        volume_ratio = wmean(volume, t, 5) / wmean(volume, t - 20, 60)
        trend_ok = (f.ma20 > f.ma20_prev5) | (p.close[t] >= f.ma50)
        fired = (
            (current <= threshold)
            & (rises <= 1)
            & (volume_ratio <= cfg.compression_volume)
            & trend_ok
        )
    return _nan_false(fired), volume_ratio


def pullback(
    p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig
) -> tuple[np.ndarray, np.ndarray]:
    n_stocks = p.close.shape[1]
    fired = np.zeros(n_stocks, dtype=bool)
    ratio = np.full(n_stocks, np.nan)
    if t < 25:
        return fired, ratio
    recent = p.close[t - 9 : t + 1]
    peak_offset = np.argmax(np.nan_to_num(recent, nan=-np.inf), axis=0)  # 0..9 within the window
    peak = recent[peak_offset, np.arange(n_stocks)]
    with np.errstate(invalid="ignore", divide="ignore"):
        depth = 1 - p.close[t] / peak
        shape_ok = (
            (f.ma20 > f.ma20_prev5)
            & (depth >= cfg.pullback_min)
            & (depth <= cfg.pullback_max)
            & (f.ret1 > 0)
        )
    volume = p.relative_volume
    for j in np.flatnonzero(_nan_false(shape_ok)):  # few stocks qualify: the volume legs per stock
        peak_day = t - 9 + peak_offset[j]
        down = np.nanmean(volume[peak_day + 1 : t + 1, j]) if peak_day < t else np.nan
        up = np.nanmean(volume[max(peak_day - 9, 0) : peak_day + 1, j])
        ratio[j] = down / up if up else np.nan
        fired[j] = ratio[j] <= cfg.pullback_volume
    return fired, ratio


def signal_expiry(trigger: str, as_of: str, open_days: np.ndarray, cfg: EngineConfig) -> str:
    """The last trading day a signal found on `as_of` is valid (its TTL in trading days)."""
    return str(trading_day_after(np.datetime64(as_of, "D"), cfg.signal_ttl(trigger), open_days))


def detect_triggers(
    p: Panel, t: int, f: SimpleNamespace, cfg: EngineConfig
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every trigger at day t over the panel's stocks (fired masks, scores), each kept to
    its `trigger_cap` strongest stocks of the day."""
    limit = trigger_cap(p, t, cfg)
    fired, scores = {}, {}
    for name, detect in TRIGGERS.items():
        mask, score = detect(p, t, f, cfg)
        fired[name], scores[name] = strongest(mask, score, STRONGER[name], limit), score
    return fired, scores


def trigger_cap(p: Panel, t: int, cfg: EngineConfig) -> int:
    """How many stocks one trigger may fire on at day t: `trigger_max_share` of the stocks
    with a bar that day, never fewer than `trigger_min_cap` (a share of a handful of
    stocks is not a share of a market)."""
    traded = int(np.count_nonzero(~np.isnan(p.close[t])))
    return max(int(cfg.trigger_max_share * traded), cfg.trigger_min_cap)


def strongest(fired: np.ndarray, score: np.ndarray, stronger: int, limit: int) -> np.ndarray:
    """`fired` kept to its `limit` strongest stocks: by score in the direction `stronger`
    (+1: higher is stronger), an unknown score last, ties by column (the code order)."""
    columns = np.flatnonzero(fired)
    if len(columns) <= limit:
        return fired
    key = np.nan_to_num(-stronger * score[columns], nan=np.inf)
    kept = np.zeros_like(fired)
    kept[columns[np.argsort(key, kind="stable")[:limit]]] = True
    return kept


# Which way each trigger's score is stronger: Spring's recovery %, EVR's and SOS's volume
# ratios higher; LPS's and compression's volume ratios, the pullback's down/up volume lower.
STRONGER = {"spring": 1, "lps": -1, "evr": 1, "sos": 1, "compression": -1, "pullback": -1}
TRIGGERS = {
    "spring": spring,
    "lps": lps,
    "evr": evr,
    "sos": sos,
    "compression": compression,
    "pullback": pullback,
}
