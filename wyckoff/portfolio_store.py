"""The portfolio tables of the state db: positions, free cash and the append-only change log.

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
        "INSERT OR REPLACE INTO positions (code, name, shares, cost_price, buy_dt, stop_loss) VALUES (?, ?, ?, ?, ?, ?)",
        (
            held["code"],
            held["name"],
            held["shares"],
            held["cost_price"],
            held["buy_dt"],
            held.get("stop_loss"),
        ),
    )


def delete_position(store: Store, code: str) -> None:
    store.conn.execute("DELETE FROM positions WHERE code = ?", (code,))


def cash(store: Store) -> float:
    row = store.conn.execute("SELECT amount FROM portfolio_cash WHERE id = 1").fetchone()
    return float(row[0]) if row else 0.0


def write_cash(store: Store, amount: float) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO portfolio_cash (id, amount) VALUES (1, ?)", (amount,)
    )


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


def mark_undone(store: Store, change_id: int) -> None:
    store.conn.execute("UPDATE portfolio_history SET undone = 1 WHERE id = ?", (change_id,))


def _change(row) -> Change:
    return Change(**{**dict(row), "before": _loads(row["before"]), "after": _loads(row["after"])})


def _dumps(state: dict[str, Any] | None) -> str | None:
    return json.dumps(state, ensure_ascii=False) if state is not None else None


def _loads(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None
