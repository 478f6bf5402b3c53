"""The portfolio tables of the state db: positions, free cash, the append-only change log,
the ledger's fills and the corporate actions applied to held positions.

Plain reads and writes only; callers that change several rows wrap them in
`store.transaction()` (the same per-thread connection), so a change is all or nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from wyckoff.store import Store


class Position(TypedDict):
    code: str
    name: str
    shares: int
    cost_price: float
    buy_dt: str
    stop_loss: float | None
    cost_cents: int  # the exact cost basis: what the shares cost, buy fees included
    # the day the user stated the share count (add, update, a holdings import): ex-dates on
    # or before it are already in it; None when fills alone made the position
    booked_dt: str | None


class Fill(TypedDict):
    id: int
    code: str
    name: str
    side: str
    shares: int
    price_mills: int
    trade_date: str
    trade_time: str | None
    value_cents: int
    commission_cents: int
    stamp_cents: int
    transfer_cents: int
    dividend_tax_cents: int
    realized_cents: int | None
    source: str
    import_key: str | None  # a broker import's key for the fill (broker_export.Delivery.key)


class Change(TypedDict):
    """One entry of the change log; `before`/`after` are a position, `{"cash": x}` or None."""

    id: int
    ts: str
    actor: str
    action: str
    code: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    undone: int


def positions(store: Store) -> list[Position]:
    rows = store.conn.execute("SELECT * FROM positions ORDER BY code").fetchall()
    return [Position(**dict(r)) for r in rows]


def position(store: Store, code: str) -> Position | None:
    row = store.conn.execute("SELECT * FROM positions WHERE code = ?", (code,)).fetchone()
    return Position(**dict(row)) if row else None


def write_position(store: Store, held: Position) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO positions"
        " (code, name, shares, cost_price, buy_dt, stop_loss, cost_cents, booked_dt)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            held["code"],
            held["name"],
            held["shares"],
            held["cost_price"],
            held["buy_dt"],
            held.get("stop_loss"),
            # history written before the ledger has no basis in cents
            held.get("cost_cents") or basis_cents(held["shares"], held["cost_price"]),
            held.get("booked_dt"),  # history written before the day was kept has none
        ),
    )


def basis_cents(shares: int, cost_price: float) -> int:
    """The cost basis of a position entered by hand (shares x average cost)."""
    return max(1, round(shares * cost_price * 100))


def delete_position(store: Store, code: str) -> None:
    store.conn.execute("DELETE FROM positions WHERE code = ?", (code,))


def cash(store: Store) -> float:
    return cash_cents(store) / 100


def cash_cents(store: Store) -> int:
    row = store.conn.execute("SELECT cents FROM portfolio_cash WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def write_cash(store: Store, amount: float) -> None:
    write_cash_cents(store, round(amount * 100))


def write_cash_cents(store: Store, cents: int) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO portfolio_cash (id, amount, cents) VALUES (1, ?, ?)",
        (cents / 100, cents),
    )


def add_cash_flow(store: Store, day: str | None, cents: int) -> int:
    """Record money moved into (+) or out of (-) the account on `day` (YYYYMMDD; None for
    the opening balance); its id."""
    cursor = store.conn.execute(
        "INSERT INTO cash_flows (flow_date, cents) VALUES (?, ?)", (day, cents)
    )
    return int(cursor.lastrowid or 0)


def delete_cash_flow(store: Store, flow_id: int) -> None:
    store.conn.execute("DELETE FROM cash_flows WHERE id = ?", (flow_id,))


def cash_flows(store: Store) -> list[dict[str, Any]]:
    """Every recorded move of money in or out: flow_date (YYYYMMDD) and cents, oldest first."""
    rows = store.conn.execute("SELECT * FROM cash_flows ORDER BY flow_date, id").fetchall()
    return [dict(r) for r in rows]


def add_fill(store: Store, fill: dict[str, Any]) -> int:
    """Store a fill (every Fill field but id) and return its id."""
    columns = [c for c in Fill.__annotations__ if c != "id"]
    cursor = store.conn.execute(
        f"INSERT INTO fills ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        [fill.get(c, 0 if c == "dividend_tax_cents" else None) for c in columns],
    )
    return int(cursor.lastrowid or 0)


def imported_keys(store: Store, keys: list[str]) -> set[str]:
    """Those of `keys` a fill already has: rows of an export booked before."""
    found: set[str] = set()
    for start in range(0, len(keys), 500):  # SQLite's limit on bound parameters
        part = keys[start : start + 500]
        rows = store.conn.execute(
            f"SELECT import_key FROM fills WHERE import_key IN ({', '.join('?' for _ in part)})",
            part,
        )
        found.update(row[0] for row in rows)
    return found


def delete_fills(store: Store, ids: list[int]) -> None:
    store.conn.executemany("DELETE FROM fills WHERE id = ?", [(i,) for i in ids])


def fills(store: Store, code: str | None = None) -> list[Fill]:
    """Fills in the order they happened (date, time, then as recorded)."""
    where, params = ("WHERE code = ?", (code,)) if code else ("", ())
    rows = store.conn.execute(
        f"SELECT * FROM fills {where} ORDER BY trade_date, coalesce(trade_time, ''), id", params
    ).fetchall()
    return [Fill(**dict(r)) for r in rows]


def shares_bought_on(store: Store, code: str, day: str) -> int:
    row = store.conn.execute(
        "SELECT coalesce(sum(shares), 0) FROM fills WHERE code = ? AND side = 'buy' AND trade_date = ?",
        (code, day),
    ).fetchone()
    return int(row[0])


def last_event_date(store: Store, code: str) -> str | None:
    """The date of the stock's newest fill or applied ex-date."""
    row = store.conn.execute(
        "SELECT max(day) FROM (SELECT trade_date AS day FROM fills WHERE code = ?"
        " UNION ALL SELECT ex_date FROM corporate_actions WHERE code = ?)",
        (code, code),
    ).fetchone()
    return row[0]


def record_change(
    store: Store,
    actor: str,
    action: str,
    code: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> None:
    store.conn.execute(
        "INSERT INTO portfolio_history (actor, action, code, before, after) VALUES (?, ?, ?, ?, ?)",
        (actor, action, code, _dumps(before), _dumps(after)),
    )


def changes(store: Store, limit: int = 50) -> list[Change]:
    """The newest changes first."""
    rows = store.conn.execute(
        "SELECT * FROM portfolio_history ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [_change(r) for r in rows]


def last_undoable(store: Store) -> Change | None:
    """The newest change that is neither an undo nor undone already."""
    row = store.conn.execute(
        "SELECT * FROM portfolio_history WHERE action != 'undo' AND undone = 0 ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return _change(row) if row else None


def last_changed(store: Store) -> dict[str, str]:
    """code -> the UTC timestamp of its newest change (undone ones left out)."""
    rows = store.conn.execute(
        "SELECT code, MAX(ts) FROM portfolio_history WHERE undone = 0 AND code IS NOT NULL"
        " GROUP BY code"
    ).fetchall()
    return {code: ts for code, ts in rows}


def mark_undone(store: Store, change_id: int) -> None:
    store.conn.execute("UPDATE portfolio_history SET undone = 1 WHERE id = ?", (change_id,))


def _change(row) -> Change:
    return Change(**{**dict(row), "before": _loads(row["before"]), "after": _loads(row["after"])})


def _dumps(state: dict[str, Any] | None) -> str | None:
    return json.dumps(state, ensure_ascii=False) if state is not None else None


def _loads(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None


# --- snapshots: what a ledger change touched, so undo restores it exactly -------------------


def snapshot(store: Store, codes: list[str], fill_ids: list[int] | None = None) -> dict[str, Any]:
    """The positions `codes` (held ones), the cash and the fills a change added."""
    held = [p for p in (position(store, code) for code in codes) if p is not None]
    return {
        "codes": sorted(set(codes)),
        "positions": held,
        "cash_cents": cash_cents(store),
        "fill_ids": fill_ids or [],
    }


def restore(store: Store, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Undo a ledger change: its positions and cash as they were, its fills gone."""
    for code in after["codes"]:
        delete_position(store, code)
    for held in before["positions"]:
        write_position(store, held)
    write_cash_cents(store, before["cash_cents"])
    delete_fills(store, after["fill_ids"])
    store.conn.executemany(
        "DELETE FROM corporate_actions WHERE id = ?", [(i,) for i in after.get("action_ids", [])]
    )


def corporate_actions(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM corporate_actions ORDER BY ex_date, code").fetchall()
    return [dict(r) for r in rows]


def corporate_action_applied(store: Store, code: str, ex_date: str) -> bool:
    row = store.conn.execute(
        "SELECT 1 FROM corporate_actions WHERE code = ? AND ex_date = ?", (code, ex_date)
    ).fetchone()
    return row is not None


def delete_corporate_action(store: Store, action_id: int) -> None:
    store.conn.execute("DELETE FROM corporate_actions WHERE id = ?", (action_id,))


def add_corporate_action(store: Store, action: dict[str, Any]) -> int:
    """Store an applied ex-date (code, ex_date, shares_before, bonus_shares, cash_cents)."""
    cursor = store.conn.execute(
        "INSERT INTO corporate_actions (code, ex_date, shares_before, bonus_shares, cash_cents)"
        " VALUES (:code, :ex_date, :shares_before, :bonus_shares, :cash_cents)",
        action,
    )
    return int(cursor.lastrowid or 0)
