"""Point-in-time backtest (ENGINE.md) with A-share trading rules and two accounting views.

At each date t the funnel sees only data up to t; the top-N triggered stocks (by the
funnel's composite score) are bought at t+1's open, unless that open is at the up limit;
positions leave by stop, trailing stop, take-profit or time, never on a bar locked
limit-down. A suspended holding keeps its last close and leaves on its first tradable day;
a delisted one leaves at its last price; one still open at the end is marked at its last
close and flagged. Views: simple (daily equal-weight returns summed, 0.5% friction per
side) and a compounding cash portfolio (board order sizes, commission with a minimum,
stamp duty on sells; holdings keep their bonus shares and dividends).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from wyckoff.engine.benchmark import benchmarks
from wyckoff.engine.funnel import FunnelResult, run_funnel
from wyckoff.engine.limits import cannot_buy, locked
from wyckoff.engine.panel import Panel, last_close, traded_ratio
from wyckoff.engine.regime import market_regime
from wyckoff.engine.strategy import affordable, buyable, cents, commission_cents, fee_cents
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
    allowed = board_mask(p, board)
    trades: list[Trade] = []
    open_trades: list[Trade] = []
    signals: list[dict[str, Any]] = []
    for t in range(start_t, end_t + 1):
        if cancelled and cancelled():
            break
        open_trades = _exits(
            p, t, open_trades, hold_days, stop_loss_pct, take_profit_pct, cfg, trailing
        )
        if t >= end_t:
            break
        if precomputed is None:
            picks = _picks(p, t, allowed, top_n, regime_gate, cfg)
        else:
            picks = precomputed.picks(t, allowed, top_n)
        signals.append({"date": str(p.dates[t]), "codes": [p.codes[j] for j in picks]})
        if t + 1 < end_t:  # a buy at the last day's open could only be marked at its close
            entered = _entries(p, t, picks, open_trades, top_n, cfg)
            trades += entered
            open_trades += entered
        if progress:
            progress((t - start_t + 1) / max(end_t - start_t, 1))
    for trade in open_trades:
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
    p: Panel, t: int, picks: list[int], open_trades: list[Trade], top_n: int, cfg: EngineConfig
) -> list[Trade]:
    """New trades at t+1's open for the picks not already held, while slots are free."""
    held = {trade.code for trade in open_trades}
    entered: list[Trade] = []
    for j in picks:
        full = len(open_trades) + len(entered) >= top_n
        if p.codes[j] in held or full or cannot_buy(p, t + 1, j, cfg):
            continue
        entered.append(Trade(p.codes[j], t + 1, float(p.open[t + 1, j])))
    return entered


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
    }


def _picks(
    p: Panel, t: int, allowed: np.ndarray, top_n: int, regime_gate: bool, cfg: EngineConfig
) -> list[int]:
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
    view["max_drawdown_pct"] = round(_max_drawdown(curve) * 100, 2)
    return view


def cash_portfolio(
    p: Panel, trades: list[Trade], start_t: int, end_t: int, slots: int, cfg: EngineConfig
) -> dict[str, Any]:
    """A 100k cash account (in cents) with `slots` equal slots, the board's order sizes,
    commission and stamp duty; holdings marked at their last close (suspended ones too).

    Shares are bought at the price as traded on the entry day; from then on the holding is
    valued on the qfq series scaled to that day (`Holding`), so bonus shares, 转增 and
    splits keep its value and a cash dividend stays in it (reinvested on the ex-date)."""
    cash = cents(cfg.start_cash)
    holdings: dict[int, Holding] = {}
    equity = []
    skipped = 0
    by_entry: dict[int, list[Trade]] = {}
    for tr in trades:
        by_entry.setdefault(tr.entry_t, []).append(tr)
    for day in range(start_t, end_t + 1):
        for key, held in list(holdings.items()):
            if held.trade.exit_t == day:
                value = held.value(held.trade.exit)
                cash += value - commission_cents(value, cfg) - fee_cents(value, cfg.stamp_duty)
                del holdings[key]
        for tr in by_entry.get(day, []):
            free = slots - len(holdings)
            held = Holding.bought(p, tr, cash, free, cfg) if free > 0 else None
            if held is None:
                skipped += 1
                continue
            cost = held.value(tr.entry)
            cash -= cost + commission_cents(cost, cfg)
            holdings[id(tr)] = held
        marked = sum(held.value(last_close(p, day, held.column)) for held in holdings.values())
        equity.append((cash + marked) / 100)
    curve = np.array(equity)
    return {
        "label": (
            f"复利口径：{cfg.start_cash:,.0f} 元现金、{slots} 个等额仓位、100 股一手（科创板至少 "
            f"{cfg.star_min_shares} 股）、佣金 {cfg.commission:.2%}（最低 {cfg.commission_min:g} 元）、"
            f"卖出印花税 {cfg.stamp_duty:.2%}，不另计摩擦成本；送转股、拆股和现金分红计入持仓"
        ),
        "final_equity": round(float(curve[-1]), 2),
        "total_return_pct": round(float(curve[-1] / cfg.start_cash - 1) * 100, 2),
        "max_drawdown_pct": round(_max_drawdown(curve) * 100, 2),
        "skipped_for_cash": skipped,
    }


@dataclass
class Holding:
    """Shares bought on the entry day, valued through the qfq series: `value(qfq_price)` is
    shares x that price scaled by the entry day's ratio (as traded / qfq), what the holding is
    worth with the bonus shares and reinvested dividends it has received since."""

    trade: Trade
    column: int
    shares: int
    ratio: float  # price as traded / qfq price on the entry day

    @classmethod
    def bought(cls, p: Panel, tr: Trade, cash: int, free: int, cfg: EngineConfig) -> Holding | None:
        """An equal share of the cash over the free slots, fees included, in the board's
        order sizes; None when not even one order fits."""
        j = p.column(tr.code)
        ratio = traded_ratio(p, tr.entry_t, j)
        price = cents(tr.entry * ratio)
        board = p.stocks["board"].iloc[j]
        shares = buyable(min(cash // free // price, affordable(cash, price, cfg)), board, cfg)
        return cls(tr, j, shares, ratio) if shares else None

    def value(self, qfq_price: float) -> int:
        """In cents: at the entry price exactly shares x the price paid."""
        return self.shares * cents(qfq_price * self.ratio)


def _trade_row(p: Panel, tr: Trade, cfg: EngineConfig) -> dict[str, Any]:
    return {
        "code": tr.code,
        "name": p.stocks["name"].iloc[p.column(tr.code)],
        "entry_date": str(p.dates[tr.entry_t]),
        "exit_date": str(p.dates[tr.exit_t]),
        "entry": round(tr.entry, 2),
        "exit": round(tr.exit, 2),
        "ret_pct": round(tr.net_return(cfg.friction_per_side) * 100, 2),
        "reason": tr.reason,
        "open_at_end": tr.open_at_end,
    }
