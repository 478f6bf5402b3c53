"""The paper account's tables of the state db: the account (capital, cash, the days it has
booked), its positions, fills, orders for the next open and daily NAV.

Plain reads and writes only; agents/paper.py wraps each booked day in `store.transaction()`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store

TABLES = ("paper_account", "paper_positions", "paper_fills", "paper_orders", "paper_nav")


def account(store: Store) -> dict[str, Any] | None:
    row = store.conn.execute("SELECT * FROM paper_account WHERE id = 1").fetchone()
    return dict(row) if row else None


def reset(store: Store, source: str, capital_cents: int, start_date: str) -> None:
    """Every paper row gone, and a new account of `capital_cents` on the `source` market,
    deciding from `start_date`."""
    for table in TABLES:
        store.conn.execute(f"DELETE FROM {table}")
    store.conn.execute(
        "INSERT INTO paper_account (id, source, capital_cents, cash_cents, start_date)"
        " VALUES (1, ?, ?, ?, ?)",
        (source, capital_cents, capital_cents, start_date),
    )


def write_day(store: Store, day: str, cash_cents: int) -> None:
    """The account booked through `day`, with this cash."""
    store.conn.execute(
        "UPDATE paper_account SET cash_cents = ?, last_date = ? WHERE id = 1", (cash_cents, day)
    )


def positions(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM paper_positions ORDER BY code").fetchall()
    return [dict(r) for r in rows]


def write_position(store: Store, held: dict[str, Any]) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO paper_positions (code, name, shares, entry_date, cost_cents)"
        " VALUES (:code, :name, :shares, :entry_date, :cost_cents)",
        held,
    )


def delete_position(store: Store, code: str) -> None:
    store.conn.execute("DELETE FROM paper_positions WHERE code = ?", (code,))


def add_fill(store: Store, fill: dict[str, Any]) -> None:
    store.conn.execute(
        "INSERT INTO paper_fills (trade_date, code, name, side, shares, price_cents, value_cents,"
        " commission_cents, stamp_cents, transfer_cents, realized_cents, reason) VALUES"
        " (:trade_date, :code, :name, :side, :shares, :price_cents, :value_cents,"
        " :commission_cents, :stamp_cents, :transfer_cents, :realized_cents, :reason)",
        fill,
    )


def fills(store: Store, day: str | None = None) -> list[dict[str, Any]]:
    """Every fill in booking order, or the fills of one day."""
    where, params = ("WHERE trade_date = ?", (day,)) if day else ("", ())
    rows = store.conn.execute(
        f"SELECT * FROM paper_fills {where} ORDER BY trade_date, id", params
    ).fetchall()
    return [dict(r) for r in rows]


def pending_orders(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute(
        "SELECT * FROM paper_orders WHERE status = 'pending' ORDER BY id"
    ).fetchall()
    return [dict(r) for r in rows]


def add_order(store: Store, decided_date: str, code: str, name: str) -> None:
    store.conn.execute(
        "INSERT INTO paper_orders (decided_date, code, name, status) VALUES (?, ?, ?, 'pending')",
        (decided_date, code, name),
    )


def close_order(store: Store, order_id: int, status: str, day: str, reason: str | None) -> None:
    """A pending order filled or left unfilled on `day` (with why)."""
    store.conn.execute(
        "UPDATE paper_orders SET status = ?, fill_date = ?, reason = ? WHERE id = ?",
        (status, day, reason, order_id),
    )


def orders_on(store: Store, day: str) -> list[dict[str, Any]]:
    """The orders that were to fill at `day`'s open, filled or not."""
    rows = store.conn.execute(
        "SELECT * FROM paper_orders WHERE fill_date = ? ORDER BY id", (day,)
    ).fetchall()
    return [dict(r) for r in rows]


def add_nav(store: Store, day: str, nav_cents: int, cash_cents: int) -> None:
    store.conn.execute(
        "INSERT INTO paper_nav (day, nav_cents, cash_cents) VALUES (?, ?, ?)",
        (day, nav_cents, cash_cents),
    )


def nav(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM paper_nav ORDER BY day").fetchall()
    return [dict(r) for r in rows]
