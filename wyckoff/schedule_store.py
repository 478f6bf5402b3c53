"""The schedule tables of the state db: schedules and their runs. A run row is unique per
schedule and day, so inserting it is how one scheduler claims the day's run: a second
scheduler racing for it inserts nothing. Plain reads and writes only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store


def schedules(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM schedules ORDER BY at, name").fetchall()
    return [{**dict(r), "command": json.loads(r["command"])} for r in rows]


def write(store: Store, name: str, at: str, days: str, kind: str, command: list) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO schedules (name, at, days, kind, command) VALUES (?, ?, ?, ?, ?)",
        (name, at, days, kind, json.dumps(command, ensure_ascii=False)),
    )


def set_paused(store: Store, name: str, paused: bool) -> bool:
    cursor = store.conn.execute(
        "UPDATE schedules SET paused = ? WHERE name = ?", (int(paused), name)
    )
    return cursor.rowcount > 0


def delete(store: Store, name: str) -> bool:
    return store.conn.execute("DELETE FROM schedules WHERE name = ?", (name,)).rowcount > 0


def claim(store: Store, name: str, day: str, status: str, detail: str, pid: int | None) -> bool:
    """Record the day's run of `name`; False when another scheduler recorded it first."""
    cursor = store.conn.execute(
        "INSERT OR IGNORE INTO schedule_runs (schedule, day, status, detail, pid, finished_at) "
        "VALUES (?, ?, ?, ?, ?, CASE WHEN ? = 'running' THEN NULL "
        "ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END)",
        (name, day, status, detail, pid, status),
    )
    return cursor.rowcount > 0


def finish(store: Store, name: str, day: str, status: str, detail: str) -> None:
    store.conn.execute(
        "UPDATE schedule_runs SET status = ?, detail = ?, "
        "finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE schedule = ? AND day = ?",
        (status, detail, name, day),
    )


def running(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM schedule_runs WHERE status = 'running'").fetchall()
    return [dict(r) for r in rows]


def runs(store: Store, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    where = "WHERE schedule = ?" if name else ""
    rows = store.conn.execute(
        f"SELECT * FROM schedule_runs {where} ORDER BY day DESC, id DESC LIMIT ?",
        (*([name] if name else []), limit),
    ).fetchall()
    return [dict(r) for r in rows]
