"""Profit and loss of the ledger: realized per stock (the sells' proceeds after fees minus
their share of the average cost) and unrealized per held position (the latest stored close x
shares minus the cost basis), in integer cents, and the totals."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from wyckoff import portfolio_store
from wyckoff.cli.tools import ToolFailure
from wyckoff.ledger.money import half_up

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store


def open_market(home, config, build: bool = True) -> tuple[MarketStore | None, str | None]:
    """The configured market store, or None and the reason (no data yet); the demo market
    is built on first use only when `build`."""
    from wyckoff.agents.market_data import MarketData

    market = MarketData(home, config)
    if not build and (not market.store.path.exists() or market.store.is_empty()):
        return None, None
    try:
        market.ready()
    except ToolFailure as failure:
        return None, str(failure)
    return market.store, None


def value_cents(shares: int, close: float) -> int:
    """shares x a stored close, to the cent (the close as stored, to 0.001)."""
    return half_up(shares * Decimal(str(round(close, 3))) * 100)


def profit_and_loss(store: Store, market: MarketStore | None) -> dict[str, Any]:
    """Rows per stock held or traded, and the account's totals; a held stock without a
    stored close has no unrealized figure (None)."""
    from wyckoff.engine.marks import closes

    held = portfolio_store.positions(store)
    marks = _latest(closes(market, [p["code"] for p in held])) if market else {}
    realized = _realized(store)
    rows = []
    for position in held:
        mark = marks.get(position["code"])
        value = value_cents(position["shares"], mark[1]) if mark else None
        rows.append(
            {
                **position,
                "close": mark[1] if mark else None,
                "close_date": mark[0] if mark else None,
                "value_cents": value,
                "unrealized_cents": None if value is None else value - position["cost_cents"],
                "realized_cents": realized.pop(position["code"], (None, 0))[1],
            }
        )
    closed = [
        {"code": code, "name": name, "shares": 0, "realized_cents": cents}
        for code, (name, cents) in sorted(realized.items())
    ]
    cash = portfolio_store.cash_cents(store)
    known = [r for r in rows if r["value_cents"] is not None]
    return {
        "positions": rows,
        "closed": closed,
        "cash_cents": cash,
        "value_cents": sum(r["value_cents"] for r in known),
        "equity_cents": cash + sum(r["value_cents"] for r in known),
        "unrealized_cents": sum(r["unrealized_cents"] for r in known),
        "realized_cents": sum(r["realized_cents"] for r in rows + closed),
        "unpriced": [r["code"] for r in rows if r["value_cents"] is None],
    }


def _latest(frame) -> dict[str, tuple[str, float]]:
    """code -> (date, close) of its newest stored bar."""
    return {row.code: (row.date, float(row.close)) for row in frame.itertuples()}


def _realized(store: Store) -> dict[str, tuple[str, int]]:
    """code -> (name, realized P&L in cents): its sells (after fees and dividend tax) and
    the cash dividends it paid."""
    totals: dict[str, tuple[str, int]] = {}
    names = {f["code"]: f["name"] for f in portfolio_store.fills(store)}
    names.update({p["code"]: p["name"] for p in portfolio_store.positions(store)})
    gains = [(f["code"], f["realized_cents"]) for f in portfolio_store.fills(store)]
    gains += [(a["code"], a["cash_cents"]) for a in portfolio_store.corporate_actions(store)]
    for code, cents in gains:
        if cents is not None:
            _, before = totals.get(code, (names.get(code, code), 0))
            totals[code] = (names.get(code, code), before + cents)
    return totals


def daily_nav(store: Store, market: MarketStore) -> dict[str, Any]:
    """The account's value at each trading day's close since its first fill, beside the
    CSI 300 over the same days.

    Walked back from today's book: each day is valued, then that day's fills and corporate
    actions are reversed. Changes made by hand (add, rm, cash) have no trade date and count
    as if they had always been so."""
    from wyckoff.engine.benchmark import CSI300
    from wyckoff.engine.marks import closes, index_closes

    events = _dated_events(store)
    held = {p["code"]: p["shares"] for p in portfolio_store.positions(store)}
    dates = [e["date"] for e in events] + [p["buy_dt"] for p in portfolio_store.positions(store)]
    start = min(dates, default=None)
    if start is None:
        return {"days": [], "note": "还没有持仓或成交记录：先用 `wyckoff portfolio buy` 记录成交。"}
    codes = sorted(set(held) | {e["code"] for e in events})
    prices = closes(market, codes, start).pivot(index="date", columns="code", values="close")
    prices = prices.sort_index().ffill()  # a suspended stock keeps its last close
    shares, cash = dict(held), portfolio_store.cash_cents(store)
    pending = sorted(events, key=lambda e: e["date"], reverse=True)
    days, unpriced = [], {}
    for day in reversed(prices.index):
        while pending and pending[0]["date"] > day:
            cash = _reverse(pending.pop(0), shares, cash)
        marks = prices.loc[day].dropna()  # none before a stock's first bar
        value = sum(value_cents(n, marks[code]) for code, n in shares.items() if code in marks)
        for code in (c for c, n in shares.items() if n and c not in marks):
            unpriced.setdefault(code, []).insert(0, day)
        days.append({"date": day, "nav_cents": cash + value, "cash_cents": cash})
    days.reverse()
    if not days:
        named = "、".join(_named(store, code) for code in codes)
        return {
            "days": [],
            "note": f"行情库没有 {named} 在 {start} 之后的收盘价，无法计算每日净值。",
        }
    beside = _beside_index(days, index_closes(market, CSI300[0], start))
    notes = [_unpriced_note(store, code, when) for code, when in sorted(unpriced.items())]
    note = " ".join([*notes, beside.pop("note") or ""]).strip() or None
    return {"days": days, "note": note, **beside}


def _named(store: Store, code: str) -> str:
    """'600519 贵州茅台': a stock held or traded, by its name in the book."""
    names = {f["code"]: f["name"] for f in portfolio_store.fills(store, code)}
    names.update({p["code"]: p["name"] for p in portfolio_store.positions(store)})
    return f"{code} {names.get(code, '')}".strip()


def _unpriced_note(store: Store, code: str, days: list[str]) -> str:
    """Which held stock the NAV left out, and on which days."""
    when = (
        f"{days[0]} " if len(days) == 1 else f"{days[0]} 至 {days[-1]}（共 {len(days)} 个交易日）"
    )
    return (
        f"行情库没有持仓 {_named(store, code)} 在 {when}的收盘价，这些天的净值没有计入它的市值；"
        f"用 `wyckoff data sync --codes {code}` 同步后再看。"
    )


def _beside_index(days: list[dict[str, Any]], index) -> dict[str, Any]:
    """Each day's return since the first day, for the account and the CSI 300."""
    from wyckoff.engine.benchmark import CSI300

    by_date = dict(zip(index["date"], index["close"], strict=True))
    first_nav, first_index = days[0]["nav_cents"], by_date.get(days[0]["date"])
    for day in days:
        day["return_pct"] = (
            round((day["nav_cents"] / first_nav - 1) * 100, 2) if first_nav else None
        )
        close = by_date.get(day["date"])
        day["csi300_pct"] = (
            round((close / first_index - 1) * 100, 2) if close and first_index else None
        )
    if first_index is None:
        return {
            "note": f"行情库没有{CSI300[1]}（{CSI300[0]}）在这些日子的指数日线，无法对比；同步或导入指数后再看。"
        }
    return {"note": None}


def _dated_events(store: Store) -> list[dict[str, Any]]:
    """Fills and corporate actions as (date, code, shares change, cash change in cents)."""
    events = []
    for fill in portfolio_store.fills(store):
        fees = fill["commission_cents"] + fill["stamp_cents"] + fill["transfer_cents"]
        if fill["side"] == "buy":
            change = (fill["shares"], -(fill["value_cents"] + fees))
        else:
            change = (-fill["shares"], fill["value_cents"] - fees - fill["dividend_tax_cents"])
        events.append(
            {
                "date": fill["trade_date"],
                "code": fill["code"],
                "shares": change[0],
                "cash": change[1],
            }
        )
    for action in portfolio_store.corporate_actions(store):
        events.append(
            {
                "date": action["ex_date"],
                "code": action["code"],
                "shares": action["bonus_shares"],
                "cash": action["cash_cents"],
            }
        )
    return events


def _reverse(event: dict[str, Any], shares: dict[str, int], cash: int) -> int:
    """Take `event` back out of the holdings; the cash before it."""
    shares[event["code"]] = shares.get(event["code"], 0) - event["shares"]
    return cash - event["cash"]
