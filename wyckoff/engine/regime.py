"""Market regime (ENGINE.md): index trend, breadth and panic decide whether buying is allowed."""

from __future__ import annotations

from typing import Any

import numpy as np

from wyckoff.engine.config import BENCHMARK, SMALL_CAP_BENCHMARK
from wyckoff.engine.indicators import nan_reduce, window
from wyckoff.engine.panel import Panel

BUY_BLOCKED = frozenset({"RISK_OFF", "CRASH", "BEAR_REBOUND", "PANIC_REPAIR"})
REGIME_LABELS = {
    "RISK_ON": "进攻（风险偏好高）",
    "NEUTRAL": "中性",
    "RISK_OFF": "防守（风险偏好低）",
    "BEAR_REBOUND": "熊市反弹",
    "PANIC_REPAIR": "恐慌修复",
    "CRASH": "恐慌下跌",
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


def _is_crash(p: Panel, t: int, breadth_now: float) -> bool:
    main = _day_return(p.index_close.get(BENCHMARK), t)
    small = _day_return(p.index_close.get(SMALL_CAP_BENCHMARK), t)
    return (main <= -0.013 or small <= -0.025) and breadth_now <= 15


def market_regime(p: Panel, t: int | None = None) -> dict[str, Any]:
    t = len(p.dates) - 1 if t is None else t
    index = p.index_close.get(BENCHMARK)
    today, yesterday = breadth(p, t), breadth(p, t - 1)
    facts: dict[str, Any] = {
        "breadth_pct": round(today, 1),
        "breadth_change": round(today - yesterday, 1),
    }
    bull_structure = False
    if index is not None and t >= 200:
        close, ma50, ma200 = (
            index[t],
            np.mean(index[t - 49 : t + 1]),
            np.mean(index[t - 199 : t + 1]),
        )
        ma50_prev = np.mean(index[t - 54 : t - 4])
        bull_structure = bool(close > ma200 and ma50 > ma200)
        facts.update(
            index_close=round(float(close), 2),
            above_ma50=bool(close > ma50),
            above_ma200=bool(close > ma200),
            ma50_rising=bool(ma50 > ma50_prev),
            ret3_pct=round(float(index[t] / index[t - 3] - 1) * 100, 2),
        )
    if _is_crash(p, t, today):
        regime, reason = "CRASH", "指数大跌且市场宽度极低"
    elif _is_crash(p, t - 1, yesterday) and (
        _day_return(index, t) >= 0.008
        or _day_return(p.index_close.get(SMALL_CAP_BENCHMARK), t) >= 0.015
    ):
        regime, reason = "PANIC_REPAIR", "恐慌日后的次日反弹"
    elif today <= 20 or today - yesterday <= -10:
        regime, reason = "RISK_OFF", "市场宽度过低或骤降"
    elif today >= 60:
        regime, reason = (
            ("RISK_ON", "市场宽度高且指数为多头结构")
            if bull_structure
            else ("BEAR_REBOUND", "宽度高但指数不在多头结构")
        )
    else:
        regime, reason = "NEUTRAL", "宽度与趋势均不极端"
    return {
        "regime": regime,
        "label": REGIME_LABELS[regime],
        "reason": reason,
        "buy_allowed": regime not in BUY_BLOCKED,
        **facts,
    }
