"""Market regime (ENGINE.md): index trend, breadth and panic decide whether buying is allowed."""

from __future__ import annotations

from typing import Any

import numpy as np

from wyckoff.engine.indicators import nan_reduce, window
from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import BENCHMARK, DEFAULT_CONFIG, SMALL_CAP_BENCHMARK, EngineConfig

BUY_BLOCKED = frozenset({"RISK_OFF", "CRASH", "BEAR_REBOUND", "PANIC_REPAIR"})
REGIME_LABELS = {
    "RISK_ON": "进攻（风险偏好高）",
    "NEUTRAL": "中性",
    "RISK_OFF": "防守（风险偏好低）",
    "BEAR_REBOUND": "熊市反弹",
    "PANIC_REPAIR": "恐慌修复",
    "CRASH": "恐慌下跌",
}
TREND_REASONS = {
    "bear": "指数处于空头趋势（收盘低于 MA50 与 MA200）",
    "falling": "指数 3 日急跌",
}


def breadth(p: Panel, t: int) -> float:
    """Share (%) of trading stocks closing above their 20-day mean."""
    if t < 0:
        return float("nan")
    ma20 = nan_reduce(np.nanmean, window(p.close, t, 20))
    close = p.close[t]
    valid = ~np.isnan(close) & ~np.isnan(ma20)
    return float(np.mean(close[valid] > ma20[valid]) * 100) if valid.any() else float("nan")


def _day_return(series: np.ndarray | None, t: int) -> float:
    if series is None or t < 1:
        return float("nan")
    return float(series[t] / series[t - 1] - 1)


def _is_crash(p: Panel, t: int, breadth_now: float, cfg: EngineConfig) -> bool:
    main = _day_return(p.index_close.get(BENCHMARK), t)
    small = _day_return(p.index_close.get(SMALL_CAP_BENCHMARK), t)
    return (
        main <= cfg.crash_index_drop or small <= cfg.crash_small_cap_drop
    ) and breadth_now <= cfg.crash_breadth


def index_trend(index: np.ndarray | None, t: int, cfg: EngineConfig) -> dict[str, Any]:
    """The main index's trend: falling (3-day return at or under the drop threshold), bull
    (above MA200 with MA50 over MA200), bear (below both MAs), else mixed; unknown without
    200 days of index data."""
    if index is None or t < 199 or np.isnan(index[t - 199 : t + 1]).any():
        return {"trend": "unknown"}
    close = index[t]
    ma50, ma200 = np.mean(index[t - 49 : t + 1]), np.mean(index[t - 199 : t + 1])
    ret3 = index[t] / index[t - 3] - 1
    if ret3 <= cfg.regime_index_drop3:
        trend = "falling"
    elif close > ma200 and ma50 > ma200:
        trend = "bull"
    elif close < ma50 and close < ma200:
        trend = "bear"
    else:
        trend = "mixed"
    return {
        "trend": trend,
        "index_close": round(float(close), 2),
        "above_ma50": bool(close > ma50),
        "above_ma200": bool(close > ma200),
        "ma50_rising": bool(ma50 > np.mean(index[t - 54 : t - 4])),
        "ret3_pct": round(float(ret3) * 100, 2),
    }


def market_day_return(p: Panel, t: int) -> tuple[float, str]:
    """The market's move on day t and what measured it: the main index, else (no index bar
    that day) the median stock's return."""
    index_move = _day_return(p.index_close.get(BENCHMARK), t)
    if not np.isnan(index_move) or t < 1:
        return index_move, "指数"
    with np.errstate(invalid="ignore", divide="ignore"):
        moves = p.close[t] / p.close[t - 1] - 1
    return float(nan_reduce(np.nanmedian, moves)), "个股中位数"


def market_regime(
    p: Panel, t: int | None = None, cfg: EngineConfig = DEFAULT_CONFIG
) -> dict[str, Any]:
    """The regime on day t. Without an index trend (no index, or under 200 days of it) the
    regime is decided from breadth and the market's day move alone, and says so."""
    t = len(p.dates) - 1 if t is None else t
    index = p.index_close.get(BENCHMARK)
    today, yesterday = breadth(p, t), breadth(p, t - 1)
    trend = index_trend(index, t, cfg)
    has_trend = trend["trend"] != "unknown"
    day_move, measured_by = market_day_return(p, t)
    facts: dict[str, Any] = {
        "breadth_pct": round(today, 1),
        "breadth_change": round(today - yesterday, 1),
        "day_return_pct": None if np.isnan(day_move) else round(day_move * 100, 2),
        "index_trend_used": has_trend,
        **trend,
    }
    small_caps = p.index_close.get(SMALL_CAP_BENCHMARK)
    if _is_crash(p, t, today, cfg):
        regime, reason = "CRASH", "指数大跌且市场宽度极低"
    elif _is_crash(p, t - 1, yesterday, cfg) and (
        _day_return(index, t) >= cfg.repair_index_rebound
        or _day_return(small_caps, t) >= cfg.repair_small_cap_rebound
    ):
        regime, reason = "PANIC_REPAIR", "恐慌日后的次日反弹"
    elif today <= cfg.breadth_risk_off or today - yesterday <= cfg.breadth_drop_risk_off:
        regime, reason = "RISK_OFF", "市场宽度过低或骤降"
    elif day_move <= cfg.regime_day_drop:
        regime, reason = "RISK_OFF", f"市场单日大跌（{measured_by} {day_move:.1%}）"
    elif today >= cfg.breadth_risk_on and not has_trend:
        regime, reason = "RISK_ON", "市场宽度高（没有指数趋势数据，只按宽度判断）"
    elif today >= cfg.breadth_risk_on:
        regime, reason = (
            ("RISK_ON", "市场宽度高且指数为多头结构")
            if trend["trend"] == "bull"
            else ("BEAR_REBOUND", "宽度高但指数不在多头结构")
        )
    elif trend["trend"] in ("bear", "falling"):
        regime, reason = "RISK_OFF", TREND_REASONS[trend["trend"]]
    elif not has_trend:
        regime, reason = "NEUTRAL", "宽度不极端（没有指数趋势数据，只按宽度判断）"
    else:
        regime, reason = "NEUTRAL", "宽度与趋势均不极端"
    return {
        "regime": regime,
        "label": REGIME_LABELS[regime],
        "reason": reason,
        "buy_allowed": regime not in BUY_BLOCKED,
        **facts,
    }
