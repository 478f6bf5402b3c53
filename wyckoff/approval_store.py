"""Pending approvals of the state db: risky tool calls a scheduled (headless) run wanted,
waiting for the user. Deciding one is a conditional UPDATE from 'pending', so a call is
applied at most once however many times it is approved. Plain reads and writes only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store

NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


def add(store: Store, tool: str, args: dict, description: str, origin: str, hours: int) -> int:
    cursor = store.conn.execute(
        "INSERT INTO pending_approvals (tool, args, description, origin, expires_at) "
        f"VALUES (?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+{int(hours)} hours'))",
        (tool, json.dumps(args, ensure_ascii=False), description, origin),
    )
    return int(cursor.lastrowid or 0)


def expire(store: Store) -> None:
    store.conn.execute(
        f"UPDATE pending_approvals SET status = 'expired', decided_at = {NOW} "
        f"WHERE status = 'pending' AND expires_at <= {NOW}"
    )


def listed(store: Store, status: str | None = "pending", limit: int = 100) -> list[dict[str, Any]]:
    where = "WHERE status = ?" if status else ""
    rows = store.conn.execute(
        f"SELECT * FROM pending_approvals {where} ORDER BY id DESC LIMIT ?",
        (*([status] if status else []), limit),
    ).fetchall()
    return [{**dict(r), "args": json.loads(r["args"])} for r in rows]


def one(store: Store, approval_id: int) -> dict[str, Any] | None:
    row = store.conn.execute(
        "SELECT * FROM pending_approvals WHERE id = ?", (approval_id,)
    ).fetchone()
    return {**dict(row), "args": json.loads(row["args"])} if row else None


def decide(store: Store, approval_id: int, status: str) -> bool:
    """Move a pending, unexpired approval to `status`; False when it was not pending."""
    cursor = store.conn.execute(
        f"UPDATE pending_approvals SET status = ?, decided_at = {NOW} "
        f"WHERE id = ? AND status = 'pending' AND expires_at > {NOW}",
        (status, approval_id),
    )
    return cursor.rowcount > 0


def reopen(store: Store, approval_id: int, reason: str) -> None:
    """An approved call that could not run waits again, with why (in `result`)."""
    store.conn.execute(
        "UPDATE pending_approvals SET status = 'pending', result = ?, decided_at = NULL "
        "WHERE id = ? AND status = 'approved'",
        (reason, approval_id),
    )


def record_result(store: Store, approval_id: int, status: str, result: str) -> None:
    store.conn.execute(
        "UPDATE pending_approvals SET status = ?, result = ? WHERE id = ?",
        (status, result, approval_id),
    )


def count_pending(store: Store) -> int:
    """Pending and not yet expired (a read: nothing is marked expired here)."""
    row = store.conn.execute(
        f"SELECT COUNT(*) FROM pending_approvals WHERE status = 'pending' AND expires_at > {NOW}"
    ).fetchone()
    return int(row[0])
