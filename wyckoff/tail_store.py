"""The tail_checks table of the state db: every tail-session verdict and its next day."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from wyckoff.store import Store


class TailCheck(TypedDict):
    id: int
    checked_at: str
    day: str
    source: str
    code: str
    name: str | None
    role: str
    verdict: str
    price: float | None
    reasons: list[str]
    unchecked: list[str]
    playbook: str | None
    next_day: str | None
    next_open_pct: float | None
    next_close_pct: float | None


def record(
    store: Store, checked_at: str, day: str, source: str, rows: list[dict[str, Any]]
) -> None:
    """One run's verdicts, all or nothing; a later run the same day replaces a stock's."""
    with store.transaction() as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO tail_checks (checked_at, day, source, code, name, role,"
            " verdict, price, reasons, unchecked, playbook) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    checked_at,
                    day,
                    source,
                    r["code"],
                    r.get("name"),
                    r["role"],
                    r["verdict"],
                    r.get("price"),
                    json.dumps(r["reasons"], ensure_ascii=False),
                    json.dumps(r["unchecked"], ensure_ascii=False),
                    (r.get("playbook") or {}).get("quote"),
                )
                for r in rows
            ],
        )


def checks(
    store: Store, code: str | None = None, limit: int = 50, day: str | None = None
) -> list[TailCheck]:
    """Newest first, optionally of one stock or one day."""
    filters = [(column, value) for column, value in (("code", code), ("day", day)) if value]
    where = " AND ".join(f"{column} = ?" for column, _ in filters)
    rows = store.conn.execute(
        f"SELECT * FROM tail_checks {'WHERE ' + where if where else ''}"
        " ORDER BY day DESC, id DESC LIMIT ?",
        (*[value for _, value in filters], limit),
    )
    return [
        TailCheck(  # type: ignore[typeddict-item]
            {
                **dict(row),
                "reasons": json.loads(row["reasons"]),
                "unchecked": json.loads(row["unchecked"]),
            }
        )
        for row in rows
    ]


def set_outcome(
    store: Store, check_id: int, next_day: str, open_pct: float, close_pct: float
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE tail_checks SET next_day = ?, next_open_pct = ?, next_close_pct = ? WHERE id = ?",
            (next_day, open_pct, close_pct, check_id),
        )
