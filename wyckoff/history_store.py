"""What the research tools produced, kept in the state db for later questions: screening
recommendations, the pending signals they raised, and stored AI reports and decisions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from wyckoff.store import Store


@dataclass(frozen=True)
class NewRecommendation:
    code: str
    name: str
    channels: list[str]
    triggers: list[str]
    score: float
    close: float


@dataclass(frozen=True)
class NewSignal:
    code: str
    name: str
    trigger: str  # its label, as shown to the user
    score: float
    expires_on: str


class _ScreenRow(TypedDict):
    """What every saved screening row has: which screen (day, data source) and which stock."""

    id: int
    created_at: str
    as_of: str
    source: str
    code: str
    name: str | None
    score: float | None


class Recommendation(_ScreenRow):
    channels: list[str]
    triggers: list[str]
    close: float | None


class Signal(_ScreenRow):
    trigger: str
    status: str
    expires_on: str


ReportKind = Literal["ai_report", "strategy_decision"]
SCREEN_MAX_CANDIDATES = 20  # a screen saves at most this many


def save_screen(
    store: Store,
    source: str,
    as_of: str,
    recommendations: list[NewRecommendation],
    signals: list[NewSignal],
) -> None:
    """One screen's results, all or nothing."""
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO recommendations (as_of, source, code, name, channels, triggers, score, close) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    as_of,
                    source,
                    r.code,
                    r.name,
                    json.dumps(r.channels, ensure_ascii=False),
                    json.dumps(r.triggers, ensure_ascii=False),
                    r.score,
                    r.close,
                )
                for r in recommendations
            ],
        )
        conn.executemany(
            "INSERT INTO signals (as_of, source, code, name, trigger, score, expires_on) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(as_of, source, s.code, s.name, s.trigger, s.score, s.expires_on) for s in signals],
        )


def recommendations(store: Store, code: str | None, limit: int) -> list[Recommendation]:
    """Newest first, optionally of one stock."""
    return [
        Recommendation(
            **{**row, "channels": _loads(row["channels"]), "triggers": _loads(row["triggers"])}
        )
        for row in _newest(store, "recommendations", code, limit)
    ]


def latest_screen(store: Store) -> list[Recommendation]:
    """The candidates of the newest screen, in its order: the newest rows of one day and
    source, up to the first code seen twice (where the screen before it begins)."""
    newest = recommendations(store, None, SCREEN_MAX_CANDIDATES)
    screen: list[Recommendation] = []
    for row in newest:
        same_screen = (row["as_of"], row["source"]) == (newest[0]["as_of"], newest[0]["source"])
        if not same_screen or any(r["code"] == row["code"] for r in screen):
            break
        screen.append(row)
    return screen[::-1]


def signals(store: Store, code: str | None, limit: int) -> list[Signal]:
    """Newest first, optionally of one stock; `status` as stored (expiry is the caller's)."""
    return [Signal(**row) for row in _newest(store, "signals", code, limit)]


def signal_dates(store: Store, code: str) -> set[str]:
    """The days a screen raised any signal for this stock."""
    rows = store.conn.execute("SELECT DISTINCT as_of FROM signals WHERE code = ?", (code,))
    return {r[0] for r in rows}


def save_report(
    store: Store, kind: ReportKind, as_of: str | None, source: str | None, body: str
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO reports (kind, as_of, source, body) VALUES (?, ?, ?, ?)",
            (kind, as_of, source, body),
        )


def latest_report(store: Store, kind: ReportKind) -> dict[str, Any] | None:
    """The body of the newest report of this kind."""
    row = store.conn.execute(
        "SELECT body FROM reports WHERE kind = ? ORDER BY id DESC LIMIT 1", (kind,)
    ).fetchone()
    return json.loads(row["body"]) if row else None


def _newest(
    store: Store, table: Literal["recommendations", "signals"], code: str | None, limit: int
) -> list[dict[str, Any]]:
    where, args = ("WHERE code = ?", [code]) if code else ("", [])
    rows = store.conn.execute(
        f"SELECT * FROM {table} {where} ORDER BY id DESC LIMIT ?", [*args, limit]
    ).fetchall()
    return [dict(r) for r in rows]


def _loads(text: str | None) -> Any:
    return json.loads(text) if isinstance(text, str) else text
