"""The backtest's compounding cash view, and the book both it and the paper account keep.

A cash account in integer cents with equal slots: each day the trades entered that day are
bought at the open (an equal share of the cash over the free slots, in the board's order
sizes), then the trades that leave that day are sold. Fees are the ledger's (ledger/fees.py):
the broker's commission with its minimum, and stamp duty and the transfer fee at the rates in
force on the trade's date (stamp duty 0.1% on sells before 2023-08-28, 0.05% since, ...).

Shares are bought at the price as traded on the entry day; from then on a holding is valued
on the qfq series scaled to that day (`Holding`), so bonus shares, 转增 and splits keep its
value and a cash dividend stays in it (reinvested on the ex-date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Protocol

import numpy as np

from wyckoff.engine.panel import Panel, last_close, traded_ratio
from wyckoff.engine.strategy import buyable, cents
from wyckoff.engine.thresholds import EngineConfig
from wyckoff.ledger.fees import BrokerFees, Fees, Side, fill_fees


class Trade(Protocol):
    """A trade as the backtest makes it (engine/backtest.py `Trade`): bought at `entry` (qfq)
    on day index `entry_t`, sold at `exit` on `exit_t` for `reason`."""

    code: str
    entry_t: int
    entry: float
    exit_t: int | None
    exit: float | None
    reason: str


COSTS_NOTE = "印花税和过户费按每笔成交当日的费率计（2023-08-28 前卖出印花税 0.1%，之后 0.05%）"


def engine_broker(cfg: EngineConfig) -> BrokerFees:
    """The commission the engine's config assumes (rate and minimum per fill)."""
    return BrokerFees(Decimal(str(cfg.commission)), cents(cfg.commission_min))


def day_of(p: Panel, t: int) -> date:
    day: date = p.dates[t].astype("datetime64[D]").astype(date)
    return day


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
    def of(cls, p: Panel, tr: Trade, shares: int) -> Holding:
        j = p.column(tr.code)
        return cls(tr, j, shares, traded_ratio(p, tr.entry_t, j))

    def value(self, qfq_price: float) -> int:
        """In cents: at the entry price exactly shares x the price paid."""
        return self.shares * cents(qfq_price * self.ratio)

    def price_cents(self, qfq_price: float) -> int:
        return cents(qfq_price * self.ratio)


@dataclass
class Booked:
    """One fill a CashBook made: its holding (shares, trade), value and fees in cents."""

    side: Side
    holding: Holding
    value: int
    fees: Fees


@dataclass
class CashBook:
    """Cash in cents and the holdings by code, changed only by `buy` and `sell`."""

    cash: int
    slots: int
    broker: BrokerFees
    cfg: EngineConfig
    holdings: dict[str, Holding] = field(default_factory=dict)

    def buy(self, p: Panel, tr: Trade) -> Booked | None:
        """Buy `tr` at its entry: an equal share of the cash over the free slots, fees
        included, in the board's order sizes; None when not even one order fits."""
        free = self.slots - len(self.holdings)
        if free <= 0:
            return None
        held = Holding.of(p, tr, 0)
        price = held.price_cents(tr.entry)
        board = str(p.stock_value(tr.code, "board") or "main")
        day = day_of(p, tr.entry_t)
        shares = buyable(self.cash // free // price, board, self.cfg)
        while shares and self._cost(shares * price, day) > self.cash:
            shares = buyable(shares - 1, board, self.cfg)  # the fees must fit too
        if not shares:
            return None
        held.shares = shares
        booked = Booked("buy", held, held.value(tr.entry), self._fees("buy", shares * price, day))
        self.cash -= booked.value + booked.fees.total
        self.holdings[tr.code] = held
        return booked

    def sell(self, p: Panel, code: str) -> Booked:
        """Sell the holding of `code` at its trade's exit price, on its exit day."""
        held = self.holdings.pop(code)
        tr = held.trade
        assert tr.exit is not None and tr.exit_t is not None, "only a closed trade is sold"
        value = held.value(tr.exit)
        booked = Booked("sell", held, value, self._fees("sell", value, day_of(p, tr.exit_t)))
        self.cash += value - booked.fees.total
        return booked

    def equity(self, p: Panel, t: int) -> int:
        """Cash plus every holding at its last close on day t (suspended ones too)."""
        return self.cash + sum(
            held.value(last_close(p, t, held.column)) for held in self.holdings.values()
        )

    def _cost(self, value: int, day: date) -> int:
        return value + self._fees("buy", value, day).total

    def _fees(self, side: Side, value: int, day: date) -> Fees:
        return fill_fees(side, value, day, self.broker)


def cash_portfolio(
    p: Panel,
    trades: list[Trade],
    start_t: int,
    end_t: int,
    slots: int,
    cfg: EngineConfig,
    broker: BrokerFees | None = None,
) -> dict[str, Any]:
    """The trades booked on a `cfg.start_cash` CashBook day by day, marked at each close."""
    book = CashBook(cents(cfg.start_cash), slots, broker or engine_broker(cfg), cfg)
    equity = []
    skipped = 0
    by_entry: dict[int, list[Trade]] = {}
    by_exit: dict[int, list[Trade]] = {}
    for tr in trades:
        by_entry.setdefault(tr.entry_t, []).append(tr)
        by_exit.setdefault(tr.exit_t or end_t, []).append(tr)
    for day in range(start_t, end_t + 1):
        for tr in by_entry.get(day, []):
            skipped += book.buy(p, tr) is None
        for tr in by_exit.get(day, []):
            held = book.holdings.get(tr.code)
            if held is not None and held.trade is tr:  # not a trade skipped for cash
                book.sell(p, tr.code)
        equity.append(book.equity(p, day) / 100)
    curve = np.array(equity)
    return {
        "label": (
            f"复利口径：{cfg.start_cash:,.0f} 元现金、{slots} 个等额仓位、开盘先买入再卖出、100 股一手"
            f"（科创板至少 {cfg.star_min_shares} 股）、佣金 {cfg.commission:.2%}"
            f"（最低 {cfg.commission_min:g} 元），{COSTS_NOTE}，不另计摩擦成本；"
            "送转股、拆股和现金分红计入持仓"
        ),
        "final_equity": round(float(curve[-1]), 2),
        "total_return_pct": round(float(curve[-1] / cfg.start_cash - 1) * 100, 2),
        "max_drawdown_pct": round(max_drawdown(curve) * 100, 2),
        "skipped_for_cash": skipped,
    }


def max_drawdown(curve: np.ndarray) -> float:
    peaks = np.maximum.accumulate(curve)
    return float(np.max(1 - curve / peaks)) if len(curve) else 0.0
