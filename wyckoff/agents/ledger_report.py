"""Profit and loss of the ledger: realized per stock (the sells' proceeds after fees minus
their share of the average cost) and unrealized per held position (the latest stored close x
shares minus the cost basis), in integer cents, and the totals. The daily NAV is in
ledger_nav.py."""

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
