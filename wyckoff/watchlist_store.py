"""The watchlist tables of the state db: watched stocks (tags, a note) and their change log.

Plain reads and writes only; callers wrap a change in `store.transaction()`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    import sqlite3

    from wyckoff.store import Store


class Watched(TypedDict):
    code: str
    name: str
    tags: list[str]
    note: str


def watched(store: Store, tag: str | None = None) -> list[Watched]:
    """The watched stocks by code; with `tag`, only those tagged so."""
    rows = store.conn.execute("SELECT code, name, tags, note FROM watchlist ORDER BY code")
    found = [_watched(r) for r in rows.fetchall()]
    return [w for w in found if tag in w["tags"]] if tag else found


def one(store: Store, code: str) -> Watched | None:
    row = store.conn.execute(
        "SELECT code, name, tags, note FROM watchlist WHERE code = ?", (code,)
    ).fetchone()
    return _watched(row) if row else None


def write(store: Store, item: Watched) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO watchlist (code, name, tags, note) VALUES (?, ?, ?, ?)",
        (item["code"], item["name"], json.dumps(item["tags"], ensure_ascii=False), item["note"]),
    )


def delete(store: Store, code: str) -> None:
    store.conn.execute("DELETE FROM watchlist WHERE code = ?", (code,))


def record_change(
    store: Store, actor: str, action: str, code: str, before: Watched | None, after: Watched | None
) -> None:
    store.conn.execute(
        "INSERT INTO watchlist_changes (actor, action, code, before, after) VALUES (?, ?, ?, ?, ?)",
        (actor, action, code, _dumps(before), _dumps(after)),
    )


def last_undoable(store: Store) -> dict[str, Any] | None:
    """The newest change that is neither an undo nor undone already."""
    row = store.conn.execute(
        "SELECT * FROM watchlist_changes WHERE action != 'undo' AND undone = 0 "
        "ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return {**dict(row), "before": _loads(row["before"]), "after": _loads(row["after"])}


def mark_undone(store: Store, change_id: int) -> None:
    store.conn.execute("UPDATE watchlist_changes SET undone = 1 WHERE id = ?", (change_id,))


def _watched(row: sqlite3.Row) -> Watched:
    return Watched(
        code=row["code"], name=row["name"], tags=json.loads(row["tags"]), note=row["note"]
    )


def _dumps(state: Watched | None) -> str | None:
    return json.dumps(state, ensure_ascii=False) if state is not None else None


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None
