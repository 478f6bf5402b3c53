"""The alert tables of the state db: rules and the alerts they fired (one per rule, stock and
date, by the table's UNIQUE constraint). Plain reads and writes only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store


def add_rule(
    store: Store,
    kind: str,
    scope: str,
    threshold: float | None,
    direction: str | None,
    cooldown_days: int,
) -> int:
    cursor = store.conn.execute(
        "INSERT INTO alert_rules (kind, scope, threshold, direction, cooldown_days) "
        "VALUES (?, ?, ?, ?, ?)",
        (kind, scope, threshold, direction, cooldown_days),
    )
    return int(cursor.lastrowid or 0)


def rules(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM alert_rules ORDER BY id").fetchall()
    return [dict(r) for r in rows]


def delete_rule(store: Store, rule_id: int) -> bool:
    return store.conn.execute("DELETE FROM alert_rules WHERE id = ?", (rule_id,)).rowcount > 0


def last_fired(store: Store) -> dict[tuple[int, str], str]:
    """(rule id, code) -> the newest date it fired."""
    rows = store.conn.execute(
        "SELECT rule_id, code, MAX(date) FROM alert_events GROUP BY rule_id, code"
    ).fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def record(store: Store, date: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Insert the hits not recorded yet for `date`; the ones inserted now."""
    new = []
    for hit in hits:
        cursor = store.conn.execute(
            "INSERT OR IGNORE INTO alert_events (rule_id, code, name, date, message) "
            "VALUES (?, ?, ?, ?, ?)",
            (hit["rule_id"], hit["code"], hit["name"], date, hit["message"]),
        )
        if cursor.rowcount:
            new.append(hit)
    return new


def events(store: Store, date: str | None = None, limit: int | None = 100) -> list[dict[str, Any]]:
    """Fired alerts, newest first, with their rule's kind; only `date`'s when given; all of
    them when `limit` is None."""
    where = "WHERE e.date = ?" if date else ""
    rows = store.conn.execute(
        "SELECT e.rule_id, r.kind, e.code, e.name, e.date, e.message, e.fired_at "
        f"FROM alert_events e JOIN alert_rules r ON r.id = e.rule_id {where} "
        "ORDER BY e.date DESC, e.id DESC LIMIT ?",
        (*([date] if date else []), -1 if limit is None else limit),  # SQLite: -1, no limit
    ).fetchall()
    return [dict(r) for r in rows]
