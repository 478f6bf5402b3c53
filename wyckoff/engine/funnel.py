"""The four-layer Wyckoff funnel (ENGINE.md) at one day index, over the whole panel.

Layer 1 tradable universe -> Layer 2 strength channels -> Layer 3 sector resonance ->
Layer 4 triggers. Pure: a Panel in, a FunnelResult out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from wyckoff.engine.indicators import (
    features_at,
    nan_quantile,
    nan_reduce,
    percentile_rank,
    window,
    wmin,
)
from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import BENCHMARK, DEFAULT_CONFIG, TRADABLE_PREFIXES, EngineConfig
from wyckoff.engine.triggers import TRIGGER_LABELS, TRIGGERS, detect_triggers

CHANNEL_LABELS = {
    "momentum": "主升",
    "ambush": "潜伏",
    "accumulation": "吸筹",
    "dry_volume": "地量",
    "divergence": "暗中护盘",
    "trend": "趋势延续",
    "breakout": "突破加速",
    "sos_ignition": "点火",
}
TREND_CHANNELS = ("momentum", "trend", "breakout", "sos_ignition")
DELISTING_PERIOD_DAYS = 15  # 退市整理期: the exchange's last 15 trading days of a delisting stock


@dataclass
class FunnelResult:
    as_of: str
    total_scanned: int
    layer1: np.ndarray  # bool masks over panel columns
    layer2: np.ndarray
    layer3: np.ndarray
    channels: dict[str, np.ndarray]
    triggers: dict[str, np.ndarray]
    trigger_scores: dict[str, np.ndarray]
    strength: np.ndarray
    score: np.ndarray
    sectors: list[dict[str, Any]] = field(default_factory=list)
    # every trigger under its Layer-4 rules over the whole panel, before the Layer-3 limit
    all_triggers: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def layer4(self) -> np.ndarray:
        fired = np.zeros_like(self.layer3)
        for mask in self.triggers.values():
            fired |= mask
        return fired & self.layer3

    def channel_labels(self, j: int) -> list[str]:
        return [CHANNEL_LABELS[name] for name, mask in self.channels.items() if mask[j]]

    def trigger_labels(self, j: int) -> list[str]:
        return [name for name, mask in self.triggers.items() if mask[j]]

    def ranked(self, limit: int | None = None) -> list[int]:
        """Column indices of Layer 3 survivors, triggered first, then by score."""
        columns = np.flatnonzero(self.layer3)
        fired = self.layer4
        order = sorted(columns, key=lambda j: (not fired[j], -self.score[j]))
        return order[:limit] if limit else order


def in_delisting_period(p: Panel, t: int) -> np.ndarray:
    """Stocks in 退市整理 on day t: named "…退" or "退市…", and t within the period's
    DELISTING_PERIOD_DAYS trading days before their final trading day (a delisted stock's
    last trade date; for a listed one, the last day of the data). The stock list's name is
    today's: without the window every past day of a stock now in 退市整理 would count too."""
    names = p.stock_list.texts("name")
    named = np.array([name.endswith("退") or "退市" in name for name in names], dtype=bool)
    final = np.full(len(p.codes), len(p.dates) - 1)
    if p.stock_list.has("last_trade_date"):
        last_trade = np.array(p.stock_list.values("last_trade_date"), dtype=object)
        delisted = np.array([isinstance(d, str) for d in last_trade], dtype=bool)
        last_days = last_trade[delisted].astype("datetime64[D]")
        final[delisted] = np.searchsorted(p.dates, last_days, side="right") - 1
    days_left = final - t
    return named & (days_left >= 0) & (days_left < DELISTING_PERIOD_DAYS)


def layer1(p: Panel, f: SimpleNamespace, t: int, cfg: EngineConfig) -> np.ndarray:
    codes = np.array(p.codes)
    prefix_ok = np.array([c.startswith(TRADABLE_PREFIXES) for c in codes])
    prefix_ok &= ~in_delisting_period(p, t)
    with np.errstate(invalid="ignore"):
        # A cap no source provides cannot be checked: the rule is skipped (data status says so).
        cap_ok = (
            np.isnan(f.market_cap)
            | (f.market_cap >= cfg.min_market_cap)
            | ((f.market_cap >= cfg.min_market_cap_liquid) & (f.amount20 >= cfg.liquid_turnover))
        )
        spiky = (f.amount_skew20 >= cfg.spiky_skew) & (
            (f.amount_median20 < cfg.spiky_median_ratio * cfg.min_turnover)
            | (f.amount_days_above < cfg.spiky_days_above)
        )
        liquid = (f.amount20 >= cfg.min_turnover) & ~spiky
        price_ok = f.raw_close >= cfg.min_close  # the price as traded that day, not qfq
    mask = prefix_ok & ~f.is_st & cap_ok & liquid & price_ok
    for column, limit, keep_if_above in (
        ("roe", cfg.min_roe, True),
        ("debt_ratio", cfg.max_debt_ratio, False),
    ):
        if p.stock_list.has(column):
            values = np.array(p.stock_list.values(column), dtype=float)
            bad = (values < limit) if keep_if_above else (values > limit)
            mask &= ~np.nan_to_num(bad, nan=0).astype(bool)
    return mask & ~np.isnan(f.close)


def layer2(
    p: Panel, f: SimpleNamespace, cfg: EngineConfig, t: int, sos_fired: np.ndarray
) -> dict[str, np.ndarray]:
    relax10 = cfg.rs_relax_factor if f.bench10 >= cfg.rs_relax_bench10 else 1.0
    relax3 = cfg.rs_relax_factor if f.bench3 >= cfg.rs_relax_bench3 else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        rs_gate = (f.rs10 >= cfg.rs10_min * relax10) & (f.rs3 >= cfg.rs3_min * relax3)
        bypass = (
            (f.rps120 >= cfg.bypass_rps120)
            & (f.ma50 > f.ma200)
            & (f.ret20 >= cfg.bypass_ret20)
            & (np.abs(f.close / f.ma50 - 1) <= cfg.bypass_ma50_distance)
            & (f.drawdown60 <= cfg.bypass_drawdown60)
        )
        rs_ok = rs_gate | bypass
        a50, a120, a_slope = cfg.rps_gate_a
        b120, b50 = cfg.rps_gate_b
        c_slope, c50, c120 = cfg.rps_gate_c
        rps_gate = (
            ((f.rps50 >= a50) & (f.rps120 >= a120) & (f.slope10 >= a_slope))
            | ((f.rps120 >= b120) & (f.rps50 >= b50))
            | ((f.slope10 >= c_slope) & (f.rps50 >= c50) & (f.rps120 >= c120))
        )
        structure = (f.ma50 > f.ma200) | (
            (f.bench3 <= cfg.momentum_bench3_drop) & (f.close >= f.ma20)
        )
        low_position = f.close <= f.low250 * cfg.low_position
        channels = {
            "momentum": structure & rs_ok & rps_gate & (f.bias200 <= cfg.momentum_bias200_max),
            "ambush": (np.abs(f.bias200) <= cfg.ambush_bias200)
            & (f.ret20 <= cfg.ambush_ret20_max)
            & (f.rps50 <= cfg.ambush_rps50_max)
            & (f.rps120 >= cfg.ambush_rps120_min)
            & (f.rs10 >= cfg.ambush_rs10_min)
            & (f.rs3 >= cfg.ambush_rs3_min),
            "accumulation": low_position
            & (f.range60 <= cfg.accumulation_range60)
            & (f.volume20 / f.volume_prior120 < cfg.accumulation_volume_ratio)
            & (f.ma_gap < cfg.accumulation_ma_gap),
            "dry_volume": low_position
            & (
                nan_reduce(np.nanmin, window(p.volume, t, 10))
                <= nan_quantile(window(p.volume, t, 250), cfg.dry_volume_quantile)
            ),
            "divergence": _divergence(p, f, t, cfg),
            "trend": (f.ma50 > f.ma200)
            & (f.rps120 >= cfg.trend_rps120)
            & (f.max_drawdown60 < cfg.trend_drawdown60)
            & (f.volume5 / f.volume20 >= cfg.trend_volume_ratio),
            "breakout": (f.close > f.ma50)
            & (f.ma50 <= f.ma200)
            & (f.rps50 >= cfg.breakout_rps50)
            & (f.ret20 >= cfg.breakout_ret20)
            & (f.volume20 / f.volume_prior60 >= cfg.breakout_volume_ratio),
            "sos_ignition": sos_fired & (f.rps120 >= cfg.sos_rps120),
        }
    return {name: np.nan_to_num(mask.astype(float), nan=0) > 0 for name, mask in channels.items()}


def _divergence(p: Panel, f: SimpleNamespace, t: int, cfg: EngineConfig) -> np.ndarray:
    bench = p.index_close.get(BENCHMARK)
    if bench is None or t < 80:
        return np.zeros(p.close.shape[1], dtype=bool)
    bench_new_low = np.nanmin(bench[t - 19 : t + 1]) < np.nanmin(bench[t - 79 : t - 19])
    if not bench_new_low:
        return np.zeros(p.close.shape[1], dtype=bool)
    with np.errstate(invalid="ignore"):
        higher_low = wmin(p.low, t, 20) > wmin(p.low, t - 20, 60)
        with_volume = f.volume20 >= f.volume_prior60
        return higher_low & with_volume & (f.close <= f.low250 * cfg.divergence_low_position)


def stock_strength(f: SimpleNamespace, universe: np.ndarray) -> np.ndarray:
    """0.4 rank(ret20) + 0.3 rank(ret5) + 0.3 rank(ret3), ranks among the universe (0-1)."""
    strength = np.full(universe.shape, np.nan)
    for weight, values in ((0.4, f.ret20), (0.3, f.ret5), (0.3, f.ret3)):
        ranked = percentile_rank(np.where(universe, values, np.nan)) / 100
        strength = np.where(np.isnan(strength), 0, strength) + weight * np.nan_to_num(ranked)
    return np.where(universe, strength, np.nan)


def layer3(
    p: Panel, l1: np.ndarray, l2: np.ndarray, strength: np.ndarray, cfg: EngineConfig
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    industries = np.array(p.stock_list.texts("industry", missing="未知"), dtype=object)
    sectors = _sector_rows(industries, l1, l2, strength)
    if not sectors:
        return l2.copy(), []
    _mark_kept(sectors, cfg)
    kept = sorted((s for s in sectors if s["kept"]), key=lambda s: -s["strength"])
    top = {s["industry"] for s in kept[: cfg.top_sectors]}
    strong_kept = {s["industry"] for s in kept if s["strength"] >= cfg.sector_strength_keep}
    in_top = np.isin(industries, list(top))
    in_strong = np.isin(industries, list(strong_kept))
    survivors = l2 & (in_top | in_strong | (np.nan_to_num(strength) >= cfg.stock_strength_keep))
    if survivors.sum() < cfg.min_survivors:
        survivors = l2.copy()
    ranking = sorted(sectors, key=lambda s: -s["strength"])
    for s in ranking:
        s["top"] = s["industry"] in top
    return survivors, ranking


def _sector_rows(
    industries: np.ndarray, l1: np.ndarray, l2: np.ndarray, strength: np.ndarray
) -> list[dict[str, Any]]:
    """Per industry of the universe: Layer-2 count, L2/L1 pass ratio, median strength."""
    sectors = []
    for industry in np.unique(industries[l1]):
        members = l1 & (industries == industry)
        passed = l2 & members
        sectors.append(
            {
                "industry": str(industry),
                "count": int(passed.sum()),
                "ratio": float(passed.sum() / max(members.sum(), 1)),
                "strength": float(np.nanmedian(strength[members])) if members.any() else 0.0,
            }
        )
    return sectors


def _mark_kept(sectors: list[dict[str, Any]], cfg: EngineConfig) -> None:
    """Kept: above the quantile on count, ratio and strength; or a very strong sector."""
    q = cfg.sector_quantile
    min_count = max(cfg.sector_min_count, np.quantile([s["count"] for s in sectors], q))
    min_ratio = np.quantile([s["ratio"] for s in sectors], q)
    strengths = [s["strength"] for s in sectors]
    min_strength = np.quantile(strengths, q)
    top_strength = np.quantile(strengths, cfg.sector_top_quantile)
    for s in sectors:
        resonant = (
            s["count"] >= min_count and s["ratio"] >= min_ratio and s["strength"] >= min_strength
        )
        standout = s["count"] >= cfg.sector_min_count and s["strength"] >= top_strength
        s["kept"] = bool(resonant or standout)


def run_funnel(p: Panel, t: int | None = None, cfg: EngineConfig = DEFAULT_CONFIG) -> FunnelResult:
    """The funnel at day index t (default: the last day)."""
    t = len(p.dates) - 1 if t is None else t
    f = features_at(p, t, cfg)
    l1 = layer1(p, f, t, cfg)
    sos_fired, _ = TRIGGERS["sos"](p, t, f, cfg)
    channels = layer2(p, f, cfg, t, sos_fired)
    l2 = l1 & np.any(np.stack(list(channels.values())), axis=0)
    channels = {name: mask & l2 for name, mask in channels.items()}
    strength = stock_strength(f, l1)
    l3, sectors = layer3(p, l1, l2, strength, cfg)
    all_triggers, scores = layer4(p, t, f, cfg, channels)
    triggers = {name: mask & l3 for name, mask in all_triggers.items()}
    fired = np.zeros_like(l3)
    for mask in triggers.values():
        fired |= mask
    score = (
        np.nan_to_num(strength) * 50
        + sum(m.astype(float) for m in channels.values()) * 10
        + fired * 20
        + np.nan_to_num(f.rps120) / 5
    )
    return FunnelResult(
        p.as_of if t == len(p.dates) - 1 else str(p.dates[t]),
        int((~np.isnan(f.close)).sum()),
        l1,
        l2,
        l3,
        channels,
        triggers,
        scores,
        strength,
        score,
        sectors,
        all_triggers,
    )


def layer4(
    p: Panel,
    t: int,
    f: SimpleNamespace,
    cfg: EngineConfig,
    channels: dict[str, np.ndarray],
    detected: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every trigger under its Layer-4 rules, for every stock (not yet limited to Layer 3):
    rejected above the bias200 cap (STAR board, trend channel or default), and a trend
    pullback only counts for a stock in a trend channel. `detected` is the triggers as
    `detect_triggers` found them, capped against the whole market: a one-stock panel
    passes its column of the market's (its own cross-section is one stock)."""
    trend = np.any(np.stack([channels[c] for c in TREND_CHANNELS]), axis=0)
    limit = np.where(
        f.board == "star",
        cfg.max_bias200_star,
        np.where(trend, cfg.max_bias200_trend, cfg.max_bias200),
    )
    with np.errstate(invalid="ignore"):
        allowed = ~(f.bias200 > limit)
    fired, scores = detected or detect_triggers(p, t, f, cfg)
    triggers = {name: mask & allowed for name, mask in fired.items()}
    triggers["pullback"] &= trend
    return triggers, scores


def market_triggers(
    p: Panel, t: int, cfg: EngineConfig
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """`detect_triggers` over the whole panel at day t, computed once per panel and day: what
    a one-stock diagnosis reads its column of."""
    return p.memo(("triggers", t, cfg), lambda: detect_triggers(p, t, features_at(p, t, cfg), cfg))


def trigger_groups(result: FunnelResult, codes: list[str]) -> dict[str, list[str]]:
    return {
        TRIGGER_LABELS[name]: [codes[j] for j in np.flatnonzero(mask)][:20]
        for name, mask in result.triggers.items()
        if mask.any()
    }
