"""Point-in-time backtest (ENGINE.md) with A-share trading rules and two accounting views.

At each date t the funnel sees only data up to t; the top-N triggered stocks (by the
funnel's composite score) are bought at t+1's open, unless that open is at the up limit;
positions leave by stop, trailing stop, take-profit or time, never on a bar locked
limit-down. A suspended holding keeps its last close and leaves on its first tradable day;
a delisted one leaves at its last price; one still open at the end is marked at its last
close and flagged. Views: simple (daily equal-weight returns summed, 0.5% friction per
side) and a compounding cash portfolio (engine/cash_view.py: board order sizes, commission
with a minimum, stamp duty and transfer fee at the rates of each trade's date; holdings keep
their bonus shares and dividends).

`strategy_day` is one day of the strategy (buy yesterday's picks at the open, exits on the
day's bar, today's picks): the backtest loops over it, the paper account (agents/paper.py)
calls it once per day as the days arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from wyckoff.engine.benchmark import benchmarks
from wyckoff.engine.cash_view import cash_portfolio, max_drawdown
from wyckoff.engine.funnel import FunnelResult, run_funnel
from wyckoff.engine.limits import cannot_buy, locked
from wyckoff.engine.panel import Panel, last_close
from wyckoff.engine.regime import market_regime
from wyckoff.engine.strategy_record import STRATEGY_RECORD
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig


@dataclass
class Trade:
    code: str
    entry_t: int
    entry: float
    exit_t: int | None = None
    exit: float | None = None
    reason: str = ""
    open_at_end: bool = False  # not sold: marked at its last close when the backtest ends

    def net_return(self, friction: float) -> float:
        return self.exit * (1 - friction) / (self.entry * (1 + friction)) - 1


def delisted(p: Panel, t: int, j: int) -> bool:
    """Delisted by day t: a delisted stock (list_status D) past its final trading day, a
    date the exchange announces beforehand. Not "no bar until the end of the data": that
    reads a suspension in cut data as a delisting, and looks ahead."""
    if "last_trade_date" not in p.stocks or p.stocks["list_status"].iloc[j] != "D":
        return False
    final = p.stocks["last_trade_date"].iloc[j]
    return isinstance(final, str) and str(p.dates[t]) > final


def board_mask(p: Panel, board: str) -> np.ndarray:
    boards = p.stocks["board"].fillna("main").to_numpy()
    return np.ones(len(boards), dtype=bool) if board == "all" else boards == board


@dataclass(frozen=True)
class Rules:
    """The strategy's parameters (`wyckoff backtest`'s defaults)."""

    hold_days: int = 10
    top_n: int = 3
    board: str = "all"
    stop_loss_pct: float = 8.0
    take_profit_pct: float = 20.0
    regime_gate: bool = True
    trailing: bool = True
    cfg: EngineConfig = DEFAULT_CONFIG


@dataclass
class Day:
    """What the strategy did on one day: bought at the open (`entered`; `unfilled` are the
    orders it did not fill, code -> why), sold on the day's bar (`exited`), still holds at the
    close (`held`), and picks at the close to buy at the next open (`picks`, columns)."""

    entered: list[Trade]
    unfilled: dict[str, str]
    exited: list[Trade]
    held: list[Trade]
    picks: list[int]


def strategy_day(
    p: Panel,
    t: int,
    held: list[Trade],
    orders: list[int],
    rules: Rules,
    *,
    decide: bool = True,
    precomputed: Signals | None = None,
    allowed: np.ndarray | None = None,
) -> Day:
    """Day t: yesterday's picks (`orders`) bought at t's open, then the exits on bar t, then
    (when `decide`) the picks of t's close among the `allowed` columns (the board's by
    default). Trades are closed in place."""
    entered, unfilled = _entries(p, t, orders, held, rules.top_n, rules.cfg)
    opened = held + entered
    still_open = _exits(
        p,
        t,
        opened,
        rules.hold_days,
        rules.stop_loss_pct,
        rules.take_profit_pct,
        rules.cfg,
        rules.trailing,
    )
    exited = [trade for trade in opened if trade.exit_t == t]
    picks: list[int] = []
    if decide:
        allowed = board_mask(p, rules.board) if allowed is None else allowed
        picks = (
            precomputed.picks(t, allowed, rules.top_n)
            if precomputed is not None
            else _picks(p, t, allowed, rules.top_n, rules.regime_gate, rules.cfg)
        )
    return Day(entered, unfilled, exited, still_open, picks)


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
    trailing: bool = True,
    cfg: EngineConfig = DEFAULT_CONFIG,
    precomputed: Signals | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """`precomputed`, when given, are this cfg's and regime_gate's precomputed rankings (a sweep
    reuses them across exit parameters); otherwise the funnel runs day by day."""
    rules = Rules(
        hold_days, top_n, board, stop_loss_pct, take_profit_pct, regime_gate, trailing, cfg
    )
    allowed = board_mask(p, board)
    trades: list[Trade] = []
    held: list[Trade] = []
    orders: list[int] = []
    signals: list[dict[str, Any]] = []
    for t in range(start_t, end_t + 1):
        if cancelled and cancelled():
            break
        day = strategy_day(
            p, t, held, orders, rules, decide=t < end_t, precomputed=precomputed, allowed=allowed
        )
        trades += day.entered
        held = day.held
        if t >= end_t:
            break
        signals.append({"date": str(p.dates[t]), "codes": [p.codes[j] for j in day.picks]})
        # a buy at the last day's open could only be marked at its close
        orders = day.picks if t + 1 < end_t else []
        if progress:
            progress((t - start_t + 1) / max(end_t - start_t, 1))
    for trade in held:
        _mark_at_end(p, end_t, trade)
    params = {
        "hold_days": hold_days,
        "top_n": top_n,
        "board": board,
        "stop_loss_pct": stop_loss_pct,
        "take_profit_pct": take_profit_pct,
        "regime_gate": regime_gate,
        "trailing": trailing,
        "rank_by": "综合评分（强度、通道、触发、RPS120），同分按代码",
    }
    return _report(p, trades, signals, start_t, end_t, params, cfg)


def _entries(
    p: Panel, t: int, orders: list[int], held: list[Trade], top_n: int, cfg: EngineConfig
) -> tuple[list[Trade], dict[str, str]]:
    """New trades at t's open for the ordered stocks not already held, while slots are free;
    and why each other order was not filled."""
    held_codes = {trade.code for trade in held}
    entered: list[Trade] = []
    unfilled: dict[str, str] = {}
    for j in orders:
        code = p.codes[j]
        why = unfilled_reason(p, t, j, cfg)
        if code in held_codes:
            why = "已持有"
        elif len(held) + len(entered) >= top_n:
            why = "仓位已满"
        if why:
            unfilled[code] = why
        else:
            entered.append(Trade(code, t, float(p.open[t, j])))
    return entered, unfilled


def unfilled_reason(p: Panel, t: int, j: int, cfg: EngineConfig) -> str | None:
    """Why a buy at t's open cannot fill (停牌 or an open at the up limit), else None."""
    if not cannot_buy(p, t, j, cfg):
        return None
    return "停牌，没有开盘价" if np.isnan(p.open[t, j]) else "开盘即涨停，排队买不进"


def _report(
    p: Panel,
    trades: list[Trade],
    signals: list[dict[str, Any]],
    start_t: int,
    end_t: int,
    params: dict[str, Any],
    cfg: EngineConfig,
) -> dict[str, Any]:
    closed = [tr for tr in trades if tr.exit is not None and tr.exit_t is not None]
    cash = cash_portfolio(p, closed, start_t, end_t, params["top_n"], cfg)
    return {
        "period": {"start": str(p.dates[start_t]), "end": str(p.dates[end_t])},
        "params": params,
        **trade_statistics(closed, params["hold_days"], cfg),
        "simple_view": simple_view(p, closed, start_t, end_t, cfg),
        "cash_portfolio": cash,
        "benchmark": benchmarks(p, start_t, end_t, cash["total_return_pct"]),
        "trade_list": [_trade_row(p, tr, cfg) for tr in closed],
        "signals": signals,
        "strategy_record": STRATEGY_RECORD,
    }


def _picks(
    p: Panel, t: int, allowed: np.ndarray, top_n: int, regime_gate: bool, cfg: EngineConfig
) -> list[int]:
    """The stocks to buy at t+1's open: none when the regime gate forbids buying."""
    if regime_gate and not market_regime(p, t)["buy_allowed"]:
        return []
    return [j for j in entry_order(p, t, run_funnel(p, t, cfg), cfg) if allowed[j]][:top_n]


def entry_order(p: Panel, t: int, result: FunnelResult, cfg: EngineConfig) -> list[int]:
    """The stocks the strategy would buy on day t's signal, best first: the funnel's
    triggered stocks, or with `cfg.quiet_trend` the quiet uptrends (docs/strategy.md)."""
    return quiet_trend(p, t, result, cfg) if cfg.quiet_trend else ranked_triggers(result)


def pick_order(result: FunnelResult, allowed: np.ndarray, top_n: int) -> list[int]:
    """Triggered stocks by the funnel's composite score (as `wyckoff screen` ranks them), ties
    by code. Not by trigger score: each trigger scores in its own unit (Spring's recovery %,
    LPS's volume ratio where lower is better), so those numbers do not compare."""
    return [j for j in ranked_triggers(result) if allowed[j]][:top_n]


def ranked_triggers(result: FunnelResult) -> list[int]:
    fired = np.flatnonzero(result.layer4)
    return [int(j) for j in sorted(fired, key=lambda j: (-result.score[j], j))]


def quiet_trend(p: Panel, t: int, result: FunnelResult, cfg: EngineConfig) -> list[int]:
    """Uptrends with no supply: stocks in the funnel's trend or momentum channel whose
    turnover that day is at or under the tradable universe's `quiet_turnover_quantile`, by
    the funnel's composite score. A markup on quiet volume, not a climax: on ten real years
    the hot-volume breakouts the triggers buy reverted, the quiet trends did not."""
    trending = result.channels["trend"] | result.channels["momentum"]
    if p.turnover_rate is None or not trending.any():
        return []
    turnover = p.turnover_rate[t]
    universe = result.layer1 & ~np.isnan(turnover)
    if not universe.any():
        return []
    ceiling = np.quantile(turnover[universe], cfg.quiet_turnover_quantile)
    quiet = np.flatnonzero(trending & (np.nan_to_num(turnover, nan=np.inf) <= ceiling))
    return [int(j) for j in sorted(quiet, key=lambda j: (-result.score[j], j))]


@dataclass
class Signals:
    """One engine configuration's signals over days start_t.. : each day's triggered stocks in
    pick order (empty when the regime gate forbade buying). Exits and top-N do not change
    them, so a sweep computes them once per configuration."""

    start_t: int
    ranked: list[list[int]]

    def picks(self, t: int, allowed: np.ndarray, top_n: int) -> list[int]:
        return [j for j in self.ranked[t - self.start_t] if allowed[j]][:top_n]


def compute_signals(
    p: Panel, start_t: int, end_t: int, regime_gate: bool, cfg: EngineConfig
) -> Signals:
    """Signals for signal days start_t..end_t - 1 (the last day only exits)."""
    ranked = []
    for t in range(start_t, end_t):
        gated = regime_gate and not market_regime(p, t)["buy_allowed"]
        ranked.append([] if gated else entry_order(p, t, run_funnel(p, t, cfg), cfg))
    return Signals(start_t, ranked)


def _exits(
    p: Panel,
    t: int,
    open_trades: list[Trade],
    hold_days: int,
    stop_pct: float,
    take_pct: float,
    cfg: EngineConfig = DEFAULT_CONFIG,
    trailing: bool = True,
) -> list[Trade]:
    still_open = []
    for trade in open_trades:
        j = p.column(trade.code)
        if t > trade.entry_t and np.isnan(p.close[t, j]) and delisted(p, t, j):
            trade.exit_t, trade.exit, trade.reason = t, last_close(p, t, j), "退市"
        elif t <= trade.entry_t or np.isnan(p.close[t, j]) or locked(p, t, j, -1, cfg):
            still_open.append(trade)  # suspended or locked limit-down: sold later
        elif not _exit_on_bar(p, t, j, trade, (hold_days, stop_pct, take_pct, trailing), cfg):
            still_open.append(trade)
    return still_open


def _exit_on_bar(
    p: Panel,
    t: int,
    j: int,
    trade: Trade,
    rules: tuple[int, float, float, bool],
    cfg: EngineConfig,
) -> bool:
    """Close the trade on bar t if a rule fires: stop, trailing stop (when on), take-profit,
    time. `rules` is (hold_days, stop %, take-profit %, trailing)."""
    hold_days, stop_pct, take_pct, trailing = rules
    stop = trade.entry * (1 - stop_pct / 100)
    trail = trailing_stop(p, t, j, trade, cfg) if trailing else None
    target = trade.entry * (1 + take_pct / 100)
    if p.low[t, j] <= stop:
        trade.exit, trade.reason = float(min(p.open[t, j], stop)), "止损"
    elif trail is not None and p.low[t, j] <= trail:
        trade.exit, trade.reason = float(min(p.open[t, j], trail)), "跟踪止损"
    elif p.high[t, j] >= target:
        trade.exit, trade.reason = float(max(p.open[t, j], target)), "止盈"
    elif t - trade.entry_t >= hold_days:
        trade.exit, trade.reason = float(p.close[t, j]), "到期"
    else:
        return False
    trade.exit_t = t
    return True


def trailing_stop(p: Panel, t: int, j: int, trade: Trade, cfg: EngineConfig) -> float | None:
    """ENGINE.md's trailing stop, from bars before t: armed once a close since entry is 15%
    above the entry, then max(highest high since entry x 0.90, MA50 x 0.98)."""
    held = slice(trade.entry_t, t)
    if t <= trade.entry_t or np.nanmax(p.close[held, j]) < trade.entry * (1 + cfg.trail_start):
        return None
    ma50 = np.nanmean(p.close[max(t - 50, 0) : t, j])
    return float(max(np.nanmax(p.high[held, j]) * cfg.trail_high, ma50 * cfg.trail_ma50))


def _mark_at_end(p: Panel, end_t: int, trade: Trade) -> None:
    """Still held when the backtest ends: valued at the last close, flagged as not sold."""
    j = p.column(trade.code)
    suspended = np.isnan(p.close[end_t, j])
    trade.exit_t, trade.exit, trade.open_at_end = end_t, last_close(p, end_t, j), True
    trade.reason = "期末停牌" if suspended else "期末持有"


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
                    else last_close(p, day - 1, j)
                )
                end = (
                    tr.exit * (1 - cfg.friction_per_side)
                    if day == tr.exit_t
                    else last_close(p, day, j)
                )
                rets.append(end / begin - 1)
        daily[day - start_t] = np.mean(rets) if rets else 0.0
    curve = 1 + np.cumsum(daily)
    view = {
        "label": (
            f"简单口径：每日持仓等权收益直接相加（不复利），买卖各计 {cfg.friction_per_side:.1%} 摩擦成本"
        ),
    }
    ruined = np.flatnonzero(curve <= 0)
    if len(ruined):  # summed losses of 100% have lost the whole stake: nothing is left to lose
        curve[ruined[0] :] = 0.0
        view["note"] = (
            f"简单口径的累计亏损在 {p.dates[start_t + ruined[0]]} 达到 100%（本金亏完），"
            "此后不再累计，收益记为 -100%。"
        )
    view["total_return_pct"] = round(float(curve[-1] - 1) * 100, 2)
    view["max_drawdown_pct"] = round(max_drawdown(curve) * 100, 2)
    return view


def _trade_row(p: Panel, tr: Trade, cfg: EngineConfig) -> dict[str, Any]:
    return {
        "code": tr.code,
        "name": p.stock_list.name_on(p.column(tr.code), str(p.dates[tr.entry_t])),
        "entry_date": str(p.dates[tr.entry_t]),
        "exit_date": str(p.dates[tr.exit_t]),
        "entry": round(tr.entry, 2),
        "exit": round(tr.exit, 2),
        "ret_pct": round(tr.net_return(cfg.friction_per_side) * 100, 2),
        "reason": tr.reason,
        "open_at_end": tr.open_at_end,
    }
