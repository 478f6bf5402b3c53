"""Long-term memories in the state db (`agent_memory`), with their search indexes kept in step.

Every write is one transaction over the row, its FTS5 trigram row, its character bigrams, its
Latin tokens and its stock codes. A memory indexed under older rules (before Latin tokens and
short stock names) is indexed again when the store is opened. Limits and age pruning follow
the design table: preference 50, decision 30 (45 days), playbook 20 (60 days), persona 5,
stock_opinion and market_view 30 (30 days), fact 30 (45 days); the oldest go first.

The staged types hold what is true for a while only: a stock_opinion is the user's view of
one stock (it always names one), a market_view their view of the market or a sector, a fact
something about the user's own situation (their capital, no time to watch the market during
the day). Market data and holdings are never memories.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from wyckoff.errors import UsageError
from wyckoff.memory.codes import resolve_codes

L1_TYPES = ("preference", "decision")  # what the layer refresh summarises
STAGED_TYPES = ("stock_opinion", "market_view", "fact")
TYPES = ("preference", "decision", "playbook", "persona", *STAGED_TYPES, "scenario")
TYPE_LABELS = {
    "preference": "偏好",
    "decision": "决策",
    "playbook": "交易剧本",
    "persona": "用户画像",
    "stock_opinion": "个股观点",
    "market_view": "市场观点",
    "fact": "事实",
    "scenario": "场景（旧版剧本）",
}
LIMITS = {
    "preference": 50,
    "decision": 30,
    "playbook": 20,
    "persona": 5,
    "stock_opinion": 30,
    "market_view": 30,
    "fact": 30,
    "scenario": 20,
}
MAX_AGE_DAYS = {
    "decision": 45,
    "playbook": 60,
    "stock_opinion": 30,
    "market_view": 30,
    "fact": 45,
    "scenario": 60,
}
MAX_CONTENT_CHARS = 500
NEWEST_PER_TERM = 100  # index rows read per search term (recall stays flat as memories grow)
# Where a memory's text came from. Only 'user' and 'model' memories speak for the user;
# 'tool_output' ones (their source held tool results, or their origin is unknown) are data.
PROVENANCE_LABELS = {"user": "用户输入", "model": "模型归纳", "tool_output": "来自工具结果"}
HAN = re.compile(r"[\u4e00-\u9fff]+")
LATIN_RUN = re.compile(r"[a-z0-9]+")
# Raised whenever what a memory's indexes hold changes (new token rules, a longer alias list).
INDEX_VERSION = 1


@dataclass
class Memory:
    id: int
    type: str
    content: str
    codes: list[str]
    source_ref: str
    metadata_json: str  # parsed on first use: recall looks at many rows, reads few
    created_at: str
    superseded_by: int | None
    provenance: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Memory:
        return cls(
            id=row["id"],
            type=row["type"],
            content=row["content"],
            codes=[c for c in row["codes"].split(",") if c],
            source_ref=row["source_ref"],
            metadata_json=row["metadata"] or "{}",
            created_at=row["created_at"],
            superseded_by=row["superseded_by"],
            provenance=row["provenance"],
        )

    @property
    def is_data(self) -> bool:
        """True when the text may repeat what a tool returned: shown as data, not the user's."""
        return self.provenance not in ("user", "model")

    @property
    def dated_type(self) -> str:
        """The type, and for a staged memory the day it was written (UTC): a view is a view
        of its time."""
        return f"{self.type} {self.created_at[:10]}" if self.type in STAGED_TYPES else self.type

    @property
    def dated_label(self) -> str:
        """`dated_type` for people: the type's Chinese name."""
        label = TYPE_LABELS.get(self.type, self.type)
        return f"{label} {self.created_at[:10]}" if self.type in STAGED_TYPES else label

    @property
    def metadata(self) -> dict[str, Any]:
        return json.loads(self.metadata_json)

    def as_dict(self) -> dict[str, Any]:
        fields = {k: v for k, v in self.__dict__.items() if k != "metadata_json"}
        return {**fields, "metadata": self.metadata}

    def age_days(self, now: datetime) -> float:
        created = datetime.fromisoformat(self.created_at.replace("Z", "+00:00"))
        return max((now - created).total_seconds() / 86400, 0.0)


def bigrams(text: str) -> set[str]:
    """Every two-character window inside each run of Chinese characters."""
    return {run[i : i + 2] for run in HAN.findall(text) for i in range(len(run) - 1)}


def latin_tokens(text: str) -> set[str]:
    """Lower-cased runs of Latin letters and digits, 2+ characters holding a letter ("MA200",
    "ST"), each whole: "st" is not a token of "test". Full-width letters count as Latin."""
    runs = LATIN_RUN.findall(unicodedata.normalize("NFKC", text).lower())
    return {run for run in runs if len(run) >= 2 and not run.isdigit()}


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def clean_content(text: str) -> str:
    """What a memory keeps of `text`: every key masked as in the chat log, whitespace folded,
    at most 500 characters."""
    from wyckoff.config import redact_text

    return " ".join(redact_text(text).split())[:MAX_CONTENT_CHARS]


def check_type(memory_type: str) -> str:
    if memory_type not in TYPES:
        raise UsageError(f"未知的记忆类型 {memory_type}：可选 {', '.join(TYPES[:-1])}。")
    return memory_type


def type_choices() -> str:
    """The types a user may name, with their Chinese labels, for `--type` help."""
    return " / ".join(f"{t}（{TYPE_LABELS[t]}）" for t in TYPES[:-1])


class MemoryStore:
    def __init__(self, store) -> None:
        self.store = store
        self._reindex_stale()

    # --- writes ---------------------------------------------------------------------------

    def insert(
        self,
        memory_type: str,
        content: str,
        *,
        codes: list[str] = (),
        source_ref: str = "",
        metadata: dict[str, Any] | None = None,
        created_at: datetime | None = None,
        supersedes: int | None = None,
        prune: bool = True,
        provenance: str = "user",
    ) -> int:
        """Write one memory (and mark `supersedes` as replaced by it); prunes its type unless
        `prune` is False (the benchmark fills a store far beyond the limits)."""
        check_type(memory_type)
        if provenance not in PROVENANCE_LABELS:
            raise ValueError(f"unknown provenance {provenance!r}")
        content = clean_content(content)
        with self.store.transaction() as conn:
            memory_id = conn.execute(
                "INSERT INTO agent_memory"
                " (type, content, codes, source_ref, metadata, created_at, provenance,"
                " index_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    memory_type,
                    content,
                    ",".join(codes),
                    source_ref,
                    json.dumps(metadata or {}, ensure_ascii=False),
                    iso(created_at or utc_now()),
                    provenance,
                    INDEX_VERSION,
                ),
            ).lastrowid
            self._index(conn, memory_id, content, list(codes))
            if supersedes is not None:
                conn.execute(
                    "UPDATE agent_memory SET superseded_by = ? WHERE id = ?",
                    (memory_id, supersedes),
                )
            if prune:
                self._prune(conn, memory_type)
        return memory_id

    def _index(self, conn: sqlite3.Connection, memory_id: int, content: str, codes: list[str]):
        """Write the memory's rows in every search index (none may exist yet)."""
        conn.execute(
            "INSERT INTO agent_memory_fts (rowid, content) VALUES (?, ?)", (memory_id, content)
        )
        conn.executemany(
            "INSERT INTO agent_memory_bigrams (bigram, memory_id) VALUES (?, ?)",
            [(pair, memory_id) for pair in bigrams(content)],
        )
        conn.executemany(
            "INSERT INTO agent_memory_tokens (token, memory_id) VALUES (?, ?)",
            [(token, memory_id) for token in latin_tokens(content)],
        )
        conn.executemany(
            "INSERT INTO agent_memory_codes (code, memory_id) VALUES (?, ?)",
            [(code, memory_id) for code in dict.fromkeys(codes)],
        )

    def _reindex_stale(self) -> None:
        """Index again the memories written under older rules; their codes gain the stocks
        the current rules find in their text (a short name such as 茅台)."""
        stale = self.store.conn.execute(
            "SELECT id, content, codes FROM agent_memory WHERE index_version < ?",
            (INDEX_VERSION,),
        ).fetchall()
        if not stale:
            return
        with self.store.transaction() as conn:
            for memory_id, content, stored in stale:
                codes = list(
                    dict.fromkeys([*filter(None, stored.split(",")), *resolve_codes(content)])
                )
                for table in ("bigrams", "tokens", "codes"):
                    conn.execute(
                        f"DELETE FROM agent_memory_{table} WHERE memory_id = ?", (memory_id,)
                    )
                conn.execute("DELETE FROM agent_memory_fts WHERE rowid = ?", (memory_id,))
                conn.execute(
                    "UPDATE agent_memory SET codes = ?, index_version = ? WHERE id = ?",
                    (",".join(codes), INDEX_VERSION, memory_id),
                )
                self._index(conn, memory_id, content, codes)

    def delete(self, memory_id: int) -> bool:
        with self.store.transaction() as conn:
            return self._delete(conn, [memory_id]) > 0

    def _delete(self, conn: sqlite3.Connection, ids: list[int]) -> int:
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        conn.execute(f"DELETE FROM agent_memory_fts WHERE rowid IN ({marks})", ids)
        return conn.execute(f"DELETE FROM agent_memory WHERE id IN ({marks})", ids).rowcount

    def _prune(self, conn: sqlite3.Connection, memory_type: str) -> None:
        """Drop the type's memories past its age limit, then the oldest beyond its count limit."""
        doomed = []
        if memory_type in MAX_AGE_DAYS:
            cutoff = iso(utc_now() - timedelta(days=MAX_AGE_DAYS[memory_type]))
            doomed += [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM agent_memory WHERE type = ? AND created_at < ?",
                    (memory_type, cutoff),
                )
            ]
        doomed += [
            r[0]
            for r in conn.execute(
                "SELECT id FROM agent_memory WHERE type = ? ORDER BY created_at DESC, id DESC"
                " LIMIT -1 OFFSET ?",
                (memory_type, LIMITS[memory_type]),
            )
        ]
        self._delete(conn, sorted(set(doomed)))

    # --- reads ----------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory | None:
        row = self.store.conn.execute(
            "SELECT * FROM agent_memory WHERE id = ?", (memory_id,)
        ).fetchone()
        return Memory.from_row(row) if row else None

    def require(self, memory_id: int) -> Memory:
        memory = self.get(memory_id)
        if memory is None:
            raise UsageError(f"没有找到记忆 {memory_id}：用 `wyckoff memory list` 查看已有记忆。")
        return memory

    def list_memories(
        self, memory_type: str | None = None, *, include_superseded: bool = True, limit: int = 500
    ) -> list[Memory]:
        """Newest first."""
        sql = "SELECT * FROM agent_memory WHERE 1 = 1"
        params: list[Any] = []
        if memory_type:
            sql += " AND type = ?"
            params.append(check_type(memory_type))
        if not include_superseded:
            sql += " AND superseded_by IS NULL"
        rows = self.store.conn.execute(
            sql + " ORDER BY created_at DESC, id DESC LIMIT ?", (*params, limit)
        )
        return [Memory.from_row(r) for r in rows]

    def latest(self, memory_types: tuple[str, ...], limit: int) -> list[Memory]:
        """The newest live (not superseded) memories of these types."""
        marks = ",".join("?" * len(memory_types))
        rows = self.store.conn.execute(
            f"SELECT * FROM agent_memory WHERE type IN ({marks}) AND superseded_by IS NULL"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            (*memory_types, limit),
        )
        return [Memory.from_row(r) for r in rows]

    def count(self) -> int:
        return self.store.conn.execute(
            "SELECT COUNT(*) FROM agent_memory WHERE superseded_by IS NULL"
        ).fetchone()[0]

    def by_ids(self, ids: list[int]) -> list[Memory]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.store.conn.execute(
            f"SELECT * FROM agent_memory WHERE id IN ({marks}) AND superseded_by IS NULL", ids
        )
        return [Memory.from_row(r) for r in rows]

    def chain(self, memory_id: int) -> list[Memory]:
        """The supersession chain through this memory, oldest first."""
        memory = self.require(memory_id)
        older: list[Memory] = []
        current = memory
        while True:
            row = self.store.conn.execute(
                "SELECT * FROM agent_memory WHERE superseded_by = ?", (current.id,)
            ).fetchone()
            if row is None or len(older) > LIMITS["preference"]:
                break
            current = Memory.from_row(row)
            older.insert(0, current)
        newer: list[Memory] = []
        current = memory
        while current.superseded_by is not None and len(newer) <= LIMITS["preference"]:
            following = self.get(current.superseded_by)
            if following is None:
                break
            newer.append(following)
            current = following
        return [*older, memory, *newer]

    # --- search indexes (ids of live memories) ----------------------------------------------

    def ids_with_codes(self, codes: list[str]) -> list[int]:
        marks = ",".join("?" * len(codes))
        rows = self.store.conn.execute(
            f"SELECT DISTINCT c.memory_id FROM agent_memory_codes c JOIN agent_memory m"
            f" ON m.id = c.memory_id WHERE c.code IN ({marks}) AND m.superseded_by IS NULL",
            codes,
        )
        return [r[0] for r in rows]

    def ids_with_bigrams(self, terms: list[str], limit: int) -> list[tuple[int, int]]:
        """(id, how many of the 2-character terms it holds), most terms first."""
        return self._ids_by_terms(
            "SELECT memory_id FROM agent_memory_bigrams WHERE bigram = ?"
            " ORDER BY memory_id DESC LIMIT ?",
            terms,
            limit,
        )

    def ids_matching_fts(self, terms: list[str], limit: int) -> list[tuple[int, int]]:
        """(id, how many of the 3+ character terms it holds), most terms first (superseded
        ones included: `by_ids` drops them). Not ranked by bm25: that scores every match of
        every term, 7 ms for a common phrase at 50,000 memories."""
        phrases = ['"' + t.replace('"', '""') + '"' for t in terms]
        return self._ids_by_terms(
            "SELECT rowid FROM agent_memory_fts WHERE agent_memory_fts MATCH ?"
            " ORDER BY rowid DESC LIMIT ?",
            phrases,
            limit,
        )

    def _ids_by_terms(self, sql: str, terms: list[str], limit: int) -> list[tuple[int, int]]:
        """Each term looks at its newest NEWEST_PER_TERM memories only, so a very common term
        costs no more than a rare one; ids that hold more terms first, then newest."""
        hits: Counter[int] = Counter()
        for term in terms:
            hits.update(r[0] for r in self.store.conn.execute(sql, (term, NEWEST_PER_TERM)))
        return sorted(hits.items(), key=lambda item: (-item[1], -item[0]))[:limit]

    def ids_with_tokens(self, tokens: list[str], limit: int) -> list[int]:
        """Live memories holding any of these Latin tokens, newest first."""
        marks = ",".join("?" * len(tokens))
        rows = self.store.conn.execute(
            f"SELECT DISTINCT t.memory_id FROM agent_memory_tokens t JOIN agent_memory m"
            f" ON m.id = t.memory_id WHERE t.token IN ({marks}) AND m.superseded_by IS NULL"
            " ORDER BY t.memory_id DESC LIMIT ?",
            (*tokens, limit),
        )
        return [r[0] for r in rows]

    # --- extraction markers and layer runs ------------------------------------------------------

    def _exists(self, sql: str, value: str) -> bool:
        return self.store.conn.execute(sql, (value,)).fetchone() is not None

    def has_marker(self, summary_hash: str) -> bool:
        return self._exists("SELECT 1 FROM memory_markers WHERE summary_hash = ?", summary_hash)

    def add_marker(self, summary_hash: str, session_id: str | None, written: int) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO memory_markers (summary_hash, session_id, written)"
                " VALUES (?, ?, ?)",
                (summary_hash, session_id, written),
            )

    def layer_run(self, source_hash: str) -> bool:
        return self._exists("SELECT 1 FROM memory_layer_runs WHERE source_hash = ?", source_hash)

    def last_layer_l1_id(self) -> int | None:
        row = self.store.conn.execute("SELECT MAX(newest_l1_id) FROM memory_layer_runs").fetchone()
        return row[0]

    def count_l1_after(self, memory_id: int) -> int:
        return self.store.conn.execute(
            "SELECT COUNT(*) FROM agent_memory WHERE id > ? AND type IN ('preference', 'decision')",
            (memory_id,),
        ).fetchone()[0]

    def record_layer_run(self, source_hash: str, newest_l1_id: int, written: int) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO memory_layer_runs (source_hash, newest_l1_id, written)"
                " VALUES (?, ?, ?)",
                (source_hash, newest_l1_id, written),
            )
