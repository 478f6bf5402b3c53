"""The paper account: the default strategy's decisions booked day by day on a second book.

Each stored trading day since the last run is one transaction: the orders of the day before
are bought at the open (an open at the up limit or a suspended stock stays unfilled, with the
reason), the holdings' exits fire on the day's bar (never on the day bought: T+1; never on a
bar locked limit-down or a suspended day), the day's picks become the orders for the next
open, and the day's NAV is written. The decisions are `wyckoff backtest`'s own
(engine/backtest.py `strategy_day`), the sizes, fees and marks the backtest cash view's
(engine/cash_view.py `CashBook`, fees by the trade's date from ledger/fees.py). So a run over
a window books exactly the backtest's trades over it; a run killed mid-way leaves whole days.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from wyckoff import paper_store
from wyckoff.engine.backtest import Day, Rules, Trade, strategy_day
from wyckoff.engine.cash_view import Booked, CashBook, Holding
from wyckoff.errors import NothingToDo, UsageError
from wyckoff.faults import crash_point

if TYPE_CHECKING:
    from wyckoff.agents.market_data import MarketData
    from wyckoff.engine.panel import Panel
    from wyckoff.ledger.fees import BrokerFees
    from wyckoff.store import Store

LOCK_FILE = ".paper.lock"
DEFAULT_CAPITAL_CENTS = 1_000_000 * 100
NO_ACCOUNT = "还没有纸面账户：先运行 `wyckoff paper reset --capital 1000000` 建立。"


def stored(day: str) -> str:
    """A market date (2026-01-05) as the ledger stores days (20260105)."""
    return day.replace("-", "")


def reset_account(store: Store, source: str, capital_cents: int, start: str) -> dict[str, Any]:
    """A new account of `capital_cents` on `source` that decides from `start` (YYYY-MM-DD,
    a stored trading day); whatever the old one held is gone."""
    if capital_cents < 100_00:
        raise UsageError(f"起始资金至少 100 元，收到 {capital_cents / 100:g}。")
    with store.transaction():
        paper_store.reset(store, source, capital_cents, stored(start))
    return paper_store.account(store) or {}


def run_paper(store: Store, market: MarketData, broker: BrokerFees) -> dict[str, Any]:
    """Book every stored trading day since the last run (the default strategy)."""
    from wyckoff.agents.backtest import YEAR
    from wyckoff.engine.window import WARMUP_DAYS

    account = _account(store, market.source)
    dates = [stored(str(d)) for d in market.bar_dates()]
    todo = [d for d in dates if _due(account, d)]
    if not todo:
        return {"days": [], "last_date": account["last_date"]}
    entries = [p["entry_date"] for p in paper_store.positions(store)]
    first = (
        dates.index(todo[0])
        if not entries
        else min(dates.index(todo[0]), dates.index(min(entries)))
    )
    if first < WARMUP_DAYS:
        raise UsageError(
            f"行情历史不足：按策略决策需要此前 {WARMUP_DAYS} 个交易日的行情，"
            f"{dates[first]} 之前只有 {first} 个；用 `wyckoff paper reset --start` 选更晚的开始日期。"
        )
    # rounded up to whole years as the backtest's latest window is: few sizes are cached
    panel = market.panel(-(-(len(dates) - first + WARMUP_DAYS) // YEAR) * YEAR)
    return {"days": run_days(store, panel, broker), "last_date": todo[-1]}


def run_days(store: Store, p: Panel, broker: BrokerFees, rules: Rules | None = None) -> list[dict]:
    """Book the panel's days the account has not booked yet, oldest first, by `rules` (the
    default strategy's unless given); what each did."""
    rules = rules or Rules()
    account = paper_store.account(store)
    if account is None:
        raise UsageError(NO_ACCOUNT)
    booked = []
    with _one_run_at_a_time(store):
        for t, day in enumerate(p.dates):
            if _due(account, stored(str(day))):
                done = book_day(store, p, t, broker, rules)
                if done is not None:
                    booked.append(done)
                crash_point("paper-day")
    return booked


@contextmanager
def _one_run_at_a_time(store: Store) -> Iterator[None]:
    """Two runs at once take turns for the whole run, not day by day: a run committing day
    after day retakes SQLite's write lock at once, so a second run waiting on it day by day
    starves past the busy timeout ("database is locked"). The second run waits here, then
    finds the days booked. The OS drops the lock when its holder dies (kill -9)."""
    import fcntl

    with open(store.path.with_name(LOCK_FILE), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _due(account: dict[str, Any], day: str) -> bool:
    """Whether `day` (YYYYMMDD) is still to be booked: from the start day, after the last."""
    last: str | None = account["last_date"]
    return day >= account["start_date"] if last is None else day > last


def _account(store: Store, source: str) -> dict[str, Any]:
    account = paper_store.account(store)
    if account is None:  # a scheduled run notes it, not a failure
        raise NothingToDo(NO_ACCOUNT)
    if account["source"] != source:
        raise UsageError(
            f"纸面账户跟的是 {account['source']} 行情，当前数据源是 {source}："
            "切回原数据源，或用 `wyckoff paper reset` 在当前行情上重新开始。"
        )
    return account


def book_day(store: Store, p: Panel, t: int, broker: BrokerFees, rules: Rules) -> dict | None:
    """Day t in one write transaction (read inside it, so two runs at once take turns): the
    open's buys, the bar's sells, the next open's orders and the NAV; None when another run
    booked the day first."""
    day = stored(str(p.dates[t]))
    with store.transaction():
        account = paper_store.account(store)
        if account is None or not _due(account, day):
            return None
        positions = paper_store.positions(store)
        pending = paper_store.pending_orders(store)
        book, decided = _decide(p, t, account, positions, pending, broker, rules)
        bought, unfilled = _buys(p, book, decided)
        costs = {position["code"]: position["cost_cents"] for position in positions}
        sold = [book.sell(p, tr.code) for tr in decided.exited if tr.code in book.holdings]
        for order in pending:
            listed = order["code"] in p.codes
            reason = unfilled.get(order["code"], None if listed else "行情库没有这只股票")
            status = "filled" if order["code"] in bought else "unfilled"
            paper_store.close_order(store, order["id"], status, day, reason)
        for booking in bought.values():
            _write_buy(store, p, day, booking)
        for booking in sold:
            _write_sell(store, p, day, booking, costs[booking.holding.trade.code])
        for j in decided.picks:
            paper_store.add_order(store, day, p.codes[j], _name(p, p.codes[j]))
        nav = book.equity(p, t)
        paper_store.add_nav(store, day, nav, book.cash)
        paper_store.write_day(store, day, book.cash)
        crash_point("paper-day-written")  # killed before the commit: the day is not booked
    return {"date": day, "bought": len(bought), "sold": len(sold), "nav_cents": nav}


def _decide(
    p: Panel,
    t: int,
    account: dict[str, Any],
    positions: list[dict[str, Any]],
    pending: list[dict[str, Any]],
    broker: BrokerFees,
    rules: Rules,
) -> tuple[CashBook, Day]:
    """The book as of the last close, and what the strategy does on day t with it."""
    held = [_trade(p, position) for position in positions]
    book = CashBook(account["cash_cents"], rules.top_n, broker, rules.cfg)
    for trade, position in zip(held, positions, strict=True):
        book.holdings[trade.code] = Holding.of(p, trade, position["shares"])
    orders = [p.column(o["code"]) for o in pending if o["code"] in p.codes]
    return book, strategy_day(p, t, held, orders, rules)


def _trade(p: Panel, position: dict[str, Any]) -> Trade:
    """A held position as the backtest's open trade: entered at its entry day's open."""
    entry_t = [stored(str(d)) for d in p.dates].index(position["entry_date"])
    j = p.column(position["code"])
    return Trade(position["code"], entry_t, float(p.open[entry_t, j]))


def _buys(p: Panel, book: CashBook, decided: Day) -> tuple[dict[str, Booked], dict[str, str]]:
    """The day's entries bought on the book (code -> booking), and why each order was not."""
    unfilled = dict(decided.unfilled)
    bought: dict[str, Booked] = {}
    for trade in decided.entered:
        booking = book.buy(p, trade)
        if booking is None:
            unfilled[trade.code] = "现金不足，买不起一手"
        else:
            bought[trade.code] = booking
    return bought, unfilled


def _name(p: Panel, code: str) -> str:
    return str(p.stock_value(code, "name") or code)


def _write_buy(store: Store, p: Panel, day: str, booking: Booked) -> None:
    held, trade = booking.holding, booking.holding.trade
    paper_store.write_position(
        store,
        {
            "code": trade.code,
            "name": _name(p, trade.code),
            "shares": held.shares,
            "entry_date": day,
            "cost_cents": booking.value + booking.fees.total,
        },
    )
    _write_fill(store, p, day, booking, None, "策略信号：前一交易日收盘选出，今日开盘买入")


def _write_sell(store: Store, p: Panel, day: str, booking: Booked, cost_cents: int) -> None:
    paper_store.delete_position(store, booking.holding.trade.code)
    realized = booking.value - booking.fees.total - cost_cents
    _write_fill(store, p, day, booking, realized, booking.holding.trade.reason)


def _write_fill(
    store: Store, p: Panel, day: str, booking: Booked, realized: int | None, reason: str
) -> None:
    held, trade = booking.holding, booking.holding.trade
    price = trade.entry if booking.side == "buy" else trade.exit
    paper_store.add_fill(
        store,
        {
            "trade_date": day,
            "code": trade.code,
            "name": _name(p, trade.code),
            "side": booking.side,
            "shares": held.shares,
            "price_cents": held.price_cents(price or 0.0),
            "value_cents": booking.value,
            "commission_cents": booking.fees.commission,
            "stamp_cents": booking.fees.stamp_duty,
            "transfer_cents": booking.fees.transfer_fee,
            "realized_cents": realized,
            "reason": reason,
        },
    )
