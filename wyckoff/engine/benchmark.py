"""What the market did over a backtest's window, beside what the strategy did.

Two benchmarks over the same days (close of the first day to close of the last): the CSI
300 (000300.SH) and the whole market, as the 中证全指 index (000985.CSI) when the store has
it, else the equal-weight market of the panel (every stock's close-to-close return averaged
each day, compounded; a suspended stock counts from its last close when it resumes). The
excess return is the compounding cash view's return minus each benchmark's, in points.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wyckoff.engine.panel import Panel

CSI300 = ("000300.SH", "沪深300")
ALL_MARKET = ("000985.CSI", "中证全指")
EQUAL_WEIGHT = ("market_equal_weight", "全市场等权")
EQUAL_WEIGHT_NOTE = (
    "行情库里没有中证全指，全市场基准改用本地全部股票每日收益的等权平均再复利，不是指数"
)


def market_benchmark(p: Panel) -> tuple[str, str]:
    """(code, name) of the whole-market benchmark this panel allows."""
    return ALL_MARKET if ALL_MARKET[0] in p.index_close else EQUAL_WEIGHT


def benchmark_names(p: Panel) -> dict[str, str]:
    """What a sweep's csi300_* and market_* columns measure."""
    market = market_benchmark(p)
    code = EQUAL_WEIGHT_NOTE if market is EQUAL_WEIGHT else market[0]
    described = f"{market[1]}（{code}）"
    return {"csi300": f"{CSI300[1]}（{CSI300[0]}）", "market": described}


def benchmarks(p: Panel, start_t: int, end_t: int, strategy_pct: float) -> dict[str, Any]:
    """The benchmarks' returns over start_t..end_t, the strategy's excess over each, and one
    Chinese sentence saying whether the strategy beat them."""
    market = market_benchmark(p)
    market_pct = (
        index_return(p, market[0], start_t, end_t)
        if market is ALL_MARKET
        else equal_weight_return(p, start_t, end_t)
    )
    rows = [
        _row(*CSI300, index_return(p, CSI300[0], start_t, end_t), strategy_pct),
        _row(*market, market_pct, strategy_pct),
    ]
    return {
        "period": {"start": str(p.dates[start_t]), "end": str(p.dates[end_t])},
        "strategy_return_pct": strategy_pct,
        "indices": rows,
        "verdict": verdict(strategy_pct, rows),
        **({"note": EQUAL_WEIGHT_NOTE} if market is EQUAL_WEIGHT else {}),
    }


def _row(code: str, name: str, pct: float | None, strategy_pct: float) -> dict[str, Any]:
    excess = None if pct is None else round(strategy_pct - pct, 2)
    return {"code": code, "name": name, "return_pct": pct, "excess_pct": excess}


def index_return(p: Panel, code: str, start_t: int, end_t: int) -> float | None:
    """The index's return in % from the close of start_t to the close of end_t; None when
    the store lacks it on either day."""
    series = p.index_close.get(code)
    if series is None or np.isnan(series[start_t]) or np.isnan(series[end_t]):
        return None
    return round(float(series[end_t] / series[start_t] - 1) * 100, 2)


def equal_weight_return(p: Panel, start_t: int, end_t: int) -> float | None:
    """Each day's mean close-to-close return of the stocks that traded, compounded, in %."""
    close = p.close[start_t : end_t + 1]
    if close.shape[1] == 0:
        return None
    previous = _carried(close)[:-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        returns = close[1:] / previous - 1
    traded = ~np.isnan(returns)
    counts = traded.sum(axis=1)
    daily = np.where(
        counts > 0, np.where(traded, returns, 0).sum(axis=1) / np.maximum(counts, 1), 0
    )
    return round(float(np.prod(1 + daily) - 1) * 100, 2)


def _carried(close: np.ndarray) -> np.ndarray:
    """Each stock's last close so far (through suspensions)."""
    rows = np.where(np.isnan(close), 0, np.arange(len(close))[:, None])
    rows = np.maximum.accumulate(rows, axis=0)
    return close[rows, np.arange(close.shape[1])]


def verdict(strategy_pct: float, rows: list[dict[str, Any]]) -> str:
    """One sentence: the strategy's return against each benchmark, in points."""
    parts = []
    for row in rows:
        if row["excess_pct"] is None:
            parts.append(f"{row['name']}（行情库没有这段数据，无法比较）")
            continue
        side = "跑赢" if row["excess_pct"] > 0 else "跑输" if row["excess_pct"] < 0 else "持平"
        gap = f"{abs(row['excess_pct']):.2f} 个百分点" if row["excess_pct"] else ""
        parts.append(f"{side}{row['name']}（{row['return_pct']:+.2f}%）{gap}")
    return f"同期策略复利收益 {strategy_pct:+.2f}%，" + "，".join(parts) + "。"
