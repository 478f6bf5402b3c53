"""Search every session's messages: what the user typed and what the assistant answered.

Two indexes, written with each message (`index_message`) and built for older messages from a
backlog the migration filled: FTS5 trigram over the text (words of 3+ characters, any script,
case-insensitive) and FTS5 over the message's short terms, the way memory indexes them (two-
character Chinese windows such as 白酒 and whole Latin tokens such as ST). Every word of the
query must occur; a two-character word of neither kind (A股, 15) is looked up by a scan.
Newest first means last saved first (a fork's copies count as saved when it was made).
Tool results and what the program wrote in the user's role are not searched: they are data.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wyckoff.errors import UsageError
from wyckoff.memory.store import bigrams, latin_tokens

if TYPE_CHECKING:
    from wyckoff.store import Store

SEARCHED_ROLES = ("user", "assistant")
ROLE_NAMES = {"user": "用户", "assistant": "助手"}
SNIPPET_BEFORE, SNIPPET_CHARS = 20, 80
BACKLOG_BATCH = 500


@dataclass
class SessionHit:
    session_id: str
    title: str
    role: str
    created_at: str  # UTC, as stored
    snippet: str
    message_id: int
    messages: int  # in the whole session

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def is_searched(role: str, kind: str | None) -> bool:
    return role in SEARCHED_ROLES and kind is None


def short_terms(text: str) -> str:
    """The text's two-character Chinese windows and Latin tokens, space-separated."""
    return " ".join(sorted(bigrams(text) | latin_tokens(text)))


def index_message(conn: sqlite3.Connection, message_id: int, text: str) -> None:
    """Put one searched message (see `is_searched`) in both indexes."""
    conn.execute("INSERT INTO message_search (rowid, text) VALUES (?, ?)", (message_id, text))
    conn.execute(
        "INSERT INTO message_terms (rowid, terms) VALUES (?, ?)", (message_id, short_terms(text))
    )


def queue_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Queue a session's searched messages for indexing (a fork copies them in SQL)."""
    conn.execute(
        "INSERT OR IGNORE INTO message_search_backlog SELECT id FROM messages"
        " WHERE session_id = ? AND role IN ('user', 'assistant') AND kind IS NULL"
        " AND COALESCE(shown, content) != ''",
        (session_id,),
    )


def unindex_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Drop a session's messages from the indexes (before they are deleted)."""
    for table in ("message_search", "message_terms"):
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT id FROM messages WHERE session_id = ?)",
            (session_id,),
        )
    conn.execute(
        "DELETE FROM message_search_backlog WHERE id IN"
        " (SELECT id FROM messages WHERE session_id = ?)",
        (session_id,),
    )


def index_backlog(store: Store) -> None:
    """Index the messages saved before the search index existed (queued by the migration)."""
    while True:
        with store.transaction() as conn:
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM message_search_backlog ORDER BY id LIMIT ?", (BACKLOG_BATCH,)
                )
            ]
            marks = ",".join("?" * len(ids))
            rows = conn.execute(
                f"SELECT id, COALESCE(shown, content) FROM messages WHERE id IN ({marks})", ids
            ).fetchall()
            conn.execute(f"DELETE FROM message_search_backlog WHERE id IN ({marks})", ids)
            for message_id, text in rows:
                index_message(conn, message_id, text)
        if len(ids) < BACKLOG_BATCH:
            return


def _words(query: str) -> list[str]:
    words = query.split()
    if not words:
        raise UsageError("没有给出要搜索的文字：例如 `wyckoff session search 茅台`。")
    short = [w for w in words if len(w) < 2]
    if short:
        raise UsageError(f"搜索词至少要 2 个字符（收到 {short[0]!r}）：请写完整一些的词。")
    return words


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _matching_ids(conn: sqlite3.Connection, words: list[str], limit: int) -> list[int]:
    """The newest `limit` indexed messages holding every word: the longer words in one
    trigram query, the short terms in one query of their index, and any other two-character
    word by a scan of the indexed text (of the other queries' hits, when there are any)."""
    long = [_phrase(w) for w in words if len(w) >= 3]
    terms = [_phrase(w.lower()) for w in words if len(w) == 2 and short_terms(w) == w.lower()]
    scanned = [w.lower() for w in words if len(w) == 2 and short_terms(w) != w.lower()]
    found: set[int] | None = None
    for table, phrases in (("message_search", long), ("message_terms", terms)):
        if phrases:
            rows = conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (" AND ".join(phrases),)
            )
            ids = {row[0] for row in rows}
            found = ids if found is None else found & ids
    if not scanned:
        return sorted(found or (), reverse=True)[:limit]
    among = "" if found is None else "rowid IN (SELECT value FROM json_each(?)) AND "
    rows = conn.execute(
        f"SELECT rowid FROM message_search WHERE {among}"
        + " AND ".join(["instr(lower(text), ?) > 0"] * len(scanned))
        + " ORDER BY rowid DESC LIMIT ?",
        (*([json.dumps(sorted(found))] if found is not None else []), *scanned, limit),
    )
    return [row[0] for row in rows]


def search_sessions(store: Store, query: str, limit: int = 20) -> list[SessionHit]:
    """Messages holding every word of `query`, newest (last saved) first, each with a masked
    snippet."""
    from wyckoff.config import redact_text

    words = _words(query)
    index_backlog(store)
    ids = _matching_ids(store.conn, words, limit)
    marks = ",".join("?" * len(ids))
    rows = store.conn.execute(
        "SELECT m.id, m.session_id, m.role, m.created_at, COALESCE(m.shown, m.content) AS text,"
        " s.title, (SELECT COUNT(*) FROM messages c WHERE c.session_id = m.session_id) AS n"
        f" FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({marks})"
        " ORDER BY m.id DESC",
        ids,
    ).fetchall()
    return [
        SessionHit(
            session_id=row["session_id"],
            title=row["title"] or "(无标题)",
            role=row["role"],
            created_at=row["created_at"],
            snippet=snippet(redact_text(row["text"]), words),
            message_id=row["id"],
            messages=row["n"],
        )
        for row in rows
    ]


def snippet(text: str, words: list[str]) -> str:
    """About 80 characters of `text` on one line, from a little before the first word found."""
    flat = " ".join(text.split())
    found = [m.start() for w in words if (m := re.search(re.escape(w), flat, re.IGNORECASE))]
    start = max(min(found, default=0) - SNIPPET_BEFORE, 0)
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")
