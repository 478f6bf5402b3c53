"""What the paper account shows: its book (`paper show`) and its daily NAV beside the real
account's and the CSI 300's over the same days (`paper nav`, the brief, the web)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import paper_store, portfolio_store
from wyckoff.agents.paper import NO_ACCOUNT
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store


def _account(store: Store) -> dict[str, Any]:
    account = paper_store.account(store)
    if account is None:
        raise UsageError(NO_ACCOUNT)
    return account


def account_market(store: Store, chosen: MarketStore) -> MarketStore | None:
    """The market the paper account follows, which after `data use` another source is not
    the chosen one: its holdings are valued at its own market's closes, never another's.
    None when that market's store has no data."""
    from wyckoff.engine.market_store import MarketStore

    account = paper_store.account(store)
    if account is None or account["source"] == chosen.source:
        return chosen
    own = MarketStore.for_source(chosen.path.parent, account["source"])
    return own if own.path.exists() and not own.is_empty() else None


def paper_book(store: Store, market: MarketStore | None) -> dict[str, Any]:
    """The account, its positions at the last close, the orders for the next open, and the
    last booked day's fills and unfilled orders with their reasons."""
    from wyckoff.agents.ledger_report import value_cents
    from wyckoff.engine.marks import closes

    account = _account(store)
    last = account["last_date"]
    positions = paper_store.positions(store)
    if market is not None and positions and last:
        frame = closes(market, [p["code"] for p in positions], last)
        latest = dict(zip(frame["code"], frame["close"], strict=True))
        for position in positions:
            close = latest.get(position["code"])
            position["close"] = close
            position["value_cents"] = (
                None if close is None else value_cents(position["shares"], close)
            )
    nav = paper_store.nav(store)
    return {
        "account": account,
        "nav_cents": nav[-1]["nav_cents"] if nav else account["cash_cents"],
        "positions": positions,
        "pending_orders": paper_store.pending_orders(store),
        "last_fills": paper_store.fills(store, last) if last else [],
        "last_unfilled": [
            o
            for o in (paper_store.orders_on(store, last) if last else [])
            if o["status"] != "filled"
        ],
    }


def paper_nav(store: Store, market: MarketStore, with_real: bool = True) -> dict[str, Any]:
    """Each booked day: the paper NAV and its return since the first day, the real account's
    return (time-weighted, agents/ledger_nav.py; not when `with_real` is False: the real
    account follows another source than `market`) and the CSI 300's over the same days."""
    from wyckoff.engine.benchmark import CSI300
    from wyckoff.engine.marks import index_closes

    account = _account(store)
    rows = paper_store.nav(store)
    if not rows:
        return {
            "account": account,
            "days": [],
            "note": "纸面账户还没有记过账：运行 `wyckoff paper run`。",
        }
    first = rows[0]["day"]
    index = index_closes(market, CSI300[0], first)
    csi = dict(zip(index["date"], index["close"], strict=True))
    real = _real_days(store, market) if with_real else {}
    real_base = next((real[r["day"]]["unit_value"] for r in rows if r["day"] in real), None)
    days = []
    for row in rows:
        same_day = real.get(row["day"], {})
        days.append(
            {
                "date": row["day"],
                "nav_cents": row["nav_cents"],
                "cash_cents": row["cash_cents"],
                "return_pct": _pct(row["nav_cents"], account["capital_cents"]),
                "real_nav_cents": same_day.get("nav_cents"),
                "real_return_pct": _pct(same_day.get("unit_value"), real_base),
                "csi300_pct": _pct(csi.get(row["day"]), csi.get(first)),
            }
        )
    notes = []
    if not with_real:
        notes.append(
            f"真实账户跟的是当前数据源，不是纸面账户的 {account['source']} 行情，这里不对比。"
        )
    elif not real:
        notes.append("真实账户还没有成交记录，没有可对比的净值。")
    if csi.get(first) is None:
        notes.append(f"行情库没有{CSI300[1]}（{CSI300[0]}）在这些日子的指数日线，无法对比。")
    return {"account": account, "days": days, "note": " ".join(notes) or None}


def _real_days(store: Store, market: MarketStore) -> dict[str, dict[str, Any]]:
    """The real account's days (NAV, time-weighted unit value) by date (none without fills)."""
    from wyckoff.agents.corporate_actions import as_caught_up
    from wyckoff.agents.ledger_nav import daily_nav

    if not portfolio_store.fills(store):
        return {}
    nav = as_caught_up(store, market, None, lambda: daily_nav(store, market))
    return {d["date"]: d for d in nav["days"]}


def _pct(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return round((value / base - 1) * 100, 2)
