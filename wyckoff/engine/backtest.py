"""Point-in-time backtest (ENGINE.md) with A-share trading rules and two accounting views.

At each date t the funnel sees only data up to t; the top-N triggered stocks are bought at
t+1's open (not when the bar is locked limit-up); positions leave by stop, take-profit or
time, never on a bar locked limit-down. Views: simple (daily equal-weight returns summed)
and a compounding cash portfolio (lots of 100, commission with a minimum, stamp duty).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from wyckoff.engine.config import DEFAULT_CONFIG, EngineConfig, limit_pct
from wyckoff.engine.funnel import run_funnel
from wyckoff.engine.panel import Panel
from wyckoff.engine.regime import market_regime


@dataclass
class Trade:
    code: str
    entry_t: int
    entry: float
    exit_t: int | None = None
    exit: float | None = None
    reason: str = ""

    def net_return(self, friction: float) -> float:
        return self.exit * (1 - friction) / (self.entry * (1 + friction)) - 1


def locked(p: Panel, t: int, j: int, direction: int) -> bool:
    """A one-price bar at the daily limit: nobody could trade into (up) or out of (down) it."""
    o, h, lo, c = p.open[t, j], p.high[t, j], p.low[t, j], p.close[t, j]
    prev = p.close[t - 1, j] if t > 0 else np.nan
    if np.isnan(c) or np.isnan(prev) or not (o == h == lo == c):
        return False
    board = p.stocks["board"].iloc[j]
    is_st = bool(p.stocks["is_st"].iloc[j])
    move = c / prev - 1
    return move * direction >= limit_pct(board, is_st) * 0.98


def board_mask(p: Panel, board: str) -> np.ndarray:
    boards = p.stocks["board"].fillna("main").to_numpy()
    return np.ones(len(boards), dtype=bool) if board == "all" else boards == board


def run_backtest(
    p: Panel,
    start_t: int,
    end_t: int,
    *,
    hold_days: int = 10,
    top_n: int = 3,
    board: str = "all",
    stop_loss_pct: float = 8.0,
    take_profit_pct: float = 20.0,
    regime_gate: bool = True,
    cfg: EngineConfig = DEFAULT_CONFIG,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    allowed = board_mask(p, board)
    trades: list[Trade] = []
    open_trades: list[Trade] = []
    signals: list[dict[str, Any]] = []
    for t in range(start_t, end_t + 1):
        if cancelled and cancelled():
            break
        open_trades = _exits(p, t, open_trades, hold_days, stop_loss_pct, take_profit_pct)
        if t >= end_t:
            break
        picks = _picks(p, t, allowed, top_n, regime_gate, cfg)
        signals.append({"date": str(p.dates[t]), "codes": [p.codes[j] for j in picks]})
        held = {trade.code for trade in open_trades}
        for j in picks:
            if (
                p.codes[j] in held
                or len(open_trades) >= top_n
                or locked(p, t + 1, j, +1)
                or np.isnan(p.open[t + 1, j])
            ):
                continue
            trade = Trade(p.codes[j], t + 1, float(p.open[t + 1, j]))
            trades.append(trade)
            open_trades.append(trade)
        if progress:
            progress((t - start_t + 1) / max(end_t - start_t, 1))
    for trade in open_trades:  # still open at the end: valued at the last close
        last = min(end_t, len(p.dates) - 1)
        trade.exit_t, trade.exit, trade.reason = (
            last,
            float(p.close[last, p.column(trade.code)]),
            "期末持有",
        )
    closed = [tr for tr in trades if tr.exit is not None and tr.exit_t is not None]
    return {
        "period": {"start": str(p.dates[start_t]), "end": str(p.dates[end_t])},
        "params": {
            "hold_days": hold_days,
            "top_n": top_n,
            "board": board,
            "stop_loss_pct": stop_loss_pct,
            "take_profit_pct": take_profit_pct,
            "regime_gate": regime_gate,
        },
        **trade_statistics(closed, hold_days, cfg),
        "simple_view": simple_view(p, closed, start_t, end_t, cfg),
        "cash_portfolio": cash_portfolio(p, closed, start_t, end_t, top_n, cfg),
        "trade_list": [_trade_row(p, tr, cfg) for tr in closed],
        "signals": signals,
    }


def _picks(
    p: Panel, t: int, allowed: np.ndarray, top_n: int, regime_gate: bool, cfg: EngineConfig
) -> list[int]:
    if regime_gate and not market_regime(p, t)["buy_allowed"]:
        return []
    result = run_funnel(p, t, cfg)
    fired = result.layer4 & allowed
    return sorted(np.flatnonzero(fired), key=lambda j: -result.score[j])[:top_n]


def _exits(
    p: Panel, t: int, open_trades: list[Trade], hold_days: int, stop_pct: float, take_pct: float
) -> list[Trade]:
    still_open = []
    for trade in open_trades:
        j = p.column(trade.code)
        if t <= trade.entry_t or np.isnan(p.close[t, j]) or locked(p, t, j, -1):
            still_open.append(trade)
            continue
        stop = trade.entry * (1 - stop_pct / 100)
        target = trade.entry * (1 + take_pct / 100)
        if p.low[t, j] <= stop:
            trade.exit, trade.reason = float(min(p.open[t, j], stop)), "止损"
        elif p.high[t, j] >= target:
            trade.exit, trade.reason = float(max(p.open[t, j], target)), "止盈"
        elif t - trade.entry_t >= hold_days:
            trade.exit, trade.reason = float(p.close[t, j]), "到期"
        else:
            still_open.append(trade)
            continue
        trade.exit_t = t
    return still_open


def trade_statistics(trades: list[Trade], hold_days: int, cfg: EngineConfig) -> dict[str, Any]:
    if not trades:
        return {
            "trades": 0,
            "win_rate_pct": None,
            "avg_ret_pct": None,
            "median_ret_pct": None,
            "var95_pct": None,
            "cvar95_pct": None,
            "max_consecutive_losses": 0,
            "sharpe_ratio": None,
        }
    returns = np.array([tr.net_return(cfg.friction_per_side) for tr in trades])
    var95 = float(np.percentile(returns, 5))
    streak = longest = 0
    for r in returns:
        streak = streak + 1 if r <= 0 else 0
        longest = max(longest, streak)
    periods = 250 / max(hold_days, 1)
    std = returns.std(ddof=1) if len(returns) > 1 else 0.0
    sharpe = (
        (returns.mean() - cfg.risk_free / periods) / std * np.sqrt(periods) if std > 0 else None
    )
    return {
        "trades": len(trades),
        "win_rate_pct": round(float((returns > 0).mean() * 100), 2),
        "avg_ret_pct": round(float(returns.mean() * 100), 3),
        "median_ret_pct": round(float(np.median(returns) * 100), 3),
        "var95_pct": round(var95 * 100, 3),
        "cvar95_pct": round(float(returns[returns <= var95].mean() * 100), 3),
        "max_consecutive_losses": longest,
        "sharpe_ratio": None if sharpe is None else round(float(sharpe), 3),
    }


def _max_drawdown(curve: np.ndarray) -> float:
    peaks = np.maximum.accumulate(curve)
    return float(np.max(1 - curve / peaks)) if len(curve) else 0.0


def simple_view(
    p: Panel, trades: list[Trade], start_t: int, end_t: int, cfg: EngineConfig
) -> dict[str, Any]:
    """Each day: the mean return of the positions held that day; days summed (no compounding)."""
    daily = np.zeros(end_t - start_t + 1)
    for day in range(start_t + 1, end_t + 1):
        rets = []
        for tr in trades:
            if tr.entry_t <= day <= tr.exit_t:
                j = p.column(tr.code)
                begin = (
                    tr.entry * (1 + cfg.friction_per_side)
                    if day == tr.entry_t
                    else p.close[day - 1, j]
                )
                end = tr.exit * (1 - cfg.friction_per_side) if day == tr.exit_t else p.close[day, j]
                rets.append(end / begin - 1)
        daily[day - start_t] = np.mean(rets) if rets else 0.0
    curve = 1 + np.cumsum(daily)
    return {
        "label": "简单口径：每日持仓等权收益直接相加（不复利）",
        "total_return_pct": round(float(curve[-1] - 1) * 100, 2),
        "max_drawdown_pct": round(_max_drawdown(curve) * 100, 2),
    }


def cash_portfolio(
    p: Panel, trades: list[Trade], start_t: int, end_t: int, slots: int, cfg: EngineConfig
) -> dict[str, Any]:
    """A 100k cash account with `slots` equal slots, 100-share lots, fees and stamp duty."""
    cash = cfg.start_cash
    holdings: dict[int, tuple[Trade, float]] = {}  # trade -> qfq units held
    equity = []
    skipped = 0
    by_entry: dict[int, list[Trade]] = {}
    for tr in trades:
        by_entry.setdefault(tr.entry_t, []).append(tr)
    for day in range(start_t, end_t + 1):
        for key, (tr, units) in list(holdings.items()):
            if tr.exit_t == day:
                value = units * tr.exit
                cash += (
                    value - max(value * cfg.commission, cfg.commission_min) - value * cfg.stamp_duty
                )
                del holdings[key]
        for tr in by_entry.get(day, []):
            free = slots - len(holdings)
            if free <= 0:
                skipped += 1
                continue
            budget = cash / free
            # Lots at the price as traded that day; held as qfq units so marks and exits
            # (qfq prices) value the same position.
            j = p.column(tr.code)
            traded = tr.entry * p.raw_close[tr.entry_t, j] / p.close[tr.entry_t, j]
            shares = int(budget // (traded * cfg.lot)) * cfg.lot
            cost = shares * traded
            fee = max(cost * cfg.commission, cfg.commission_min)
            while shares and cost + fee > cash:
                shares -= cfg.lot
                cost = shares * traded
                fee = max(cost * cfg.commission, cfg.commission_min)
            if shares == 0:
                skipped += 1
                continue
            cash -= cost + fee
            holdings[id(tr)] = (tr, cost / tr.entry)
        marked = sum(
            units * np.nan_to_num(p.close[day, p.column(tr.code)], nan=tr.entry)
            for tr, units in holdings.values()
        )
        equity.append(cash + marked)
    curve = np.array(equity)
    return {
        "label": f"复利口径：{cfg.start_cash:,.0f} 元现金、{slots} 个等额仓位、100 股一手、佣金 {cfg.commission:.2%}（最低 {cfg.commission_min:g} 元）、卖出印花税 {cfg.stamp_duty:.2%}",
        "final_equity": round(float(curve[-1]), 2),
        "total_return_pct": round(float(curve[-1] / cfg.start_cash - 1) * 100, 2),
        "max_drawdown_pct": round(_max_drawdown(curve) * 100, 2),
        "skipped_for_cash": skipped,
    }


def _trade_row(p: Panel, tr: Trade, cfg: EngineConfig) -> dict[str, Any]:
    return {
        "code": tr.code,
        "entry_date": str(p.dates[tr.entry_t]),
        "exit_date": str(p.dates[tr.exit_t]),
        "entry": round(tr.entry, 2),
        "exit": round(tr.exit, 2),
        "ret_pct": round(tr.net_return(cfg.friction_per_side) * 100, 2),
        "reason": tr.reason,
    }
