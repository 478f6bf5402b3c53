"""The scorecard tables of the state db: advice as it was given, its entry and its outcomes.

Nothing here updates or deletes a row. An item is inserted once (a second recording of the
same kind, stock, day, advice and market is ignored); an entry and each horizon's outcome
are inserted once when known (a second process computing the same row concurrently finds it
there and leaves it), so two writers cannot corrupt or change what was written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store


@dataclass(frozen=True)
class NewItem:
    kind: str  # screen, decision, tail, alert, agent, manual
    code: str
    name: str | None
    as_of: str  # YYYY-MM-DD: the last market day the advice knew
    advice: str  # buy, sell, avoid
    source: str  # the market store it was given on (demo, tushare, import, ...)
    price: float | None = None  # the price it was given at, as traded
    stop: float | None = None  # its stop, as traded on as_of
    note: str = ""


@dataclass(frozen=True)
class NewEntry:
    item_id: int
    entry_date: str
    entry_price: float | None  # as traded; None when unfillable
    unfillable: str | None


@dataclass(frozen=True)
class NewOutcome:
    item_id: int
    horizon: int
    exit_date: str
    stock_return: float
    market_return: float | None
    csi300_return: float | None
    mfe: float | None = None
    mae: float | None = None
    stop_hit: bool | None = None


def record(store: Store, items: list[NewItem]) -> int:
    """Insert the items not recorded yet, in one transaction; how many were new."""
    with store.transaction() as conn:
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO scorecard_items (kind, code, name, as_of, advice, source,"
            " price, stop, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (i.kind, i.code, i.name, i.as_of, i.advice, i.source, i.price, i.stop, i.note)
                for i in items
            ],
        )
        return conn.total_changes - before


def items(store: Store, since: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
    """Items oldest first with their entry (NULL columns before it is known)."""
    filters = [
        (sql, value) for sql, value in (("i.as_of >= ?", since), ("i.kind = ?", kind)) if value
    ]
    where = " AND ".join(sql for sql, _ in filters)
    rows = store.conn.execute(
        "SELECT i.*, e.entry_date, e.entry_price, e.unfillable FROM scorecard_items i"
        " LEFT JOIN scorecard_entries e ON e.item_id = i.id"
        f" {'WHERE ' + where if where else ''} ORDER BY i.as_of, i.id",
        [value for _, value in filters],
    ).fetchall()
    return [dict(row) for row in rows]


def outcomes(store: Store) -> dict[int, dict[int, dict[str, Any]]]:
    """item id -> horizon -> its outcome row."""
    found: dict[int, dict[int, dict[str, Any]]] = {}
    for row in store.conn.execute("SELECT * FROM scorecard_outcomes"):
        found.setdefault(row["item_id"], {})[row["horizon"]] = dict(row)
    return found


def unfinished(store: Store, horizons: tuple[int, ...]) -> list[dict[str, Any]]:
    """Items that still lack their entry or, entered, an outcome of one of `horizons`."""
    marks = ", ".join("?" for _ in horizons)
    rows = store.conn.execute(
        "SELECT i.*, e.entry_date, e.entry_price, e.unfillable FROM scorecard_items i"
        " LEFT JOIN scorecard_entries e ON e.item_id = i.id"
        " WHERE e.item_id IS NULL OR (e.unfillable IS NULL AND (SELECT COUNT(*) FROM"
        f" scorecard_outcomes o WHERE o.item_id = i.id AND o.horizon IN ({marks})) < ?)"
        " ORDER BY i.as_of, i.id",
        (*horizons, len(horizons)),
    ).fetchall()
    return [dict(row) for row in rows]


def save_results(store: Store, entries: list[NewEntry], found: list[NewOutcome]) -> None:
    """Entries and outcomes not written yet, all in one transaction."""
    with store.transaction() as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO scorecard_entries (item_id, entry_date, entry_price, unfillable)"
            " VALUES (?, ?, ?, ?)",
            [(e.item_id, e.entry_date, e.entry_price, e.unfillable) for e in entries],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO scorecard_outcomes (item_id, horizon, exit_date, stock_return,"
            " market_return, csi300_return, mfe, mae, stop_hit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    o.item_id,
                    o.horizon,
                    o.exit_date,
                    o.stock_return,
                    o.market_return,
                    o.csi300_return,
                    o.mfe,
                    o.mae,
                    None if o.stop_hit is None else int(o.stop_hit),
                )
                for o in found
            ],
        )
