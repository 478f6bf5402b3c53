"""The SQLite state db (`wyckoff.db`): one connection per thread, WAL, numbered migrations.

Migrations are appended to `MIGRATIONS`, never edited: pending migrations run once, in one
write transaction that also reads `PRAGMA user_version` (so parallel first runs take turns),
and the version records the last one applied. A newer db than this code knows is
refused rather than touched.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wyckoff.errors import WyckoffError

DB_FILE = "wyckoff.db"

MIGRATIONS: tuple[str, ...] = (
    # 1: usage of every model call
    """
    CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        ts TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        session_id TEXT,
        model_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL
    );
    CREATE INDEX usage_ts ON usage (ts);
    """,
    # 2: chat log (sessions and their messages) and background task results
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        parent_id TEXT REFERENCES sessions (id) ON DELETE SET NULL
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        tool_calls TEXT,
        tool_call_id TEXT,
        name TEXT,
        reasoning_content TEXT,
        provider_data TEXT,
        model TEXT,
        provider TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        elapsed_s REAL,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        UNIQUE (session_id, seq)
    );
    CREATE TABLE background_tasks (
        id TEXT PRIMARY KEY,
        session_id TEXT,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        status TEXT NOT NULL,
        stage TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '',
        progress REAL,
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        finished_at TEXT,
        notified INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX background_tasks_session ON background_tasks (session_id, status)
    """,
    # 3: screening results: recommendations and pending signals awaiting confirmation
    """
    CREATE TABLE recommendations (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        as_of TEXT NOT NULL,
        source TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT,
        channels TEXT,
        triggers TEXT,
        score REAL,
        close REAL
    );
    CREATE INDEX recommendations_code ON recommendations (code, as_of);
    CREATE TABLE signals (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        as_of TEXT NOT NULL,
        source TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT,
        trigger TEXT NOT NULL,
        score REAL,
        status TEXT NOT NULL DEFAULT 'pending',
        expires_on TEXT NOT NULL
    );
    CREATE INDEX signals_code ON signals (code, status)
    """,
    # 4: portfolio (positions, free cash, append-only history) and stored AI reports/decisions
    """
    CREATE TABLE positions (
        code TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        shares INTEGER NOT NULL CHECK (shares > 0 AND shares % 100 = 0),
        cost_price REAL NOT NULL CHECK (cost_price > 0),
        buy_dt TEXT NOT NULL,
        stop_loss REAL
    );
    CREATE TABLE portfolio_cash (id INTEGER PRIMARY KEY CHECK (id = 1), amount REAL NOT NULL CHECK (amount >= 0));
    CREATE TABLE portfolio_history (
        id INTEGER PRIMARY KEY,
        ts TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        code TEXT,
        before TEXT,
        after TEXT,
        undone INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE reports (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        kind TEXT NOT NULL,
        as_of TEXT,
        source TEXT,
        body TEXT NOT NULL
    )
    """,
    # 5: the process running a background task, so a task whose process died is not "running"
    """
    ALTER TABLE background_tasks ADD COLUMN owner_pid INTEGER
    """,
    # 6: long-term memory (L1 preference/decision, L2 playbook, L3 persona) and its indexes:
    # FTS5 trigram for terms of 3+ characters, a bigram table for 2-character Chinese terms,
    # a code table for exact stock recall; extraction markers and layer-refresh runs
    """
    CREATE TABLE agent_memory (
        id INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        codes TEXT NOT NULL DEFAULT '',
        source_ref TEXT NOT NULL DEFAULT '',
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        superseded_by INTEGER REFERENCES agent_memory (id) ON DELETE SET NULL
    );
    CREATE INDEX agent_memory_type ON agent_memory (type, created_at);
    CREATE VIRTUAL TABLE agent_memory_fts USING fts5 (content, tokenize = 'trigram');
    CREATE TABLE agent_memory_bigrams (
        bigram TEXT NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES agent_memory (id) ON DELETE CASCADE,
        PRIMARY KEY (bigram, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX agent_memory_bigrams_memory ON agent_memory_bigrams (memory_id);
    CREATE TABLE agent_memory_codes (
        code TEXT NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES agent_memory (id) ON DELETE CASCADE,
        PRIMARY KEY (code, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX agent_memory_codes_memory ON agent_memory_codes (memory_id);
    CREATE TABLE memory_markers (
        summary_hash TEXT PRIMARY KEY,
        session_id TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        written INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE memory_layer_runs (
        source_hash TEXT PRIMARY KEY,
        newest_l1_id INTEGER NOT NULL,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        written INTEGER NOT NULL DEFAULT 0
    )
    """,
    # 7: the kind of a message the program wrote in the user's role (meta.kind), and what
    # the user typed when the program added an instruction (meta.shown); messages saved
    # before it were told apart by how their text starts, so they are given theirs
    """
    ALTER TABLE messages ADD COLUMN kind TEXT;
    UPDATE messages SET kind = 'notification'
        WHERE role = 'user' AND instr(content, '[SYSTEM NOTIFICATION - NOT USER INPUT]') = 1;
    UPDATE messages SET kind = 'tool_retry' WHERE role = 'user' AND instr(content, '[系统提醒]') = 1;
    UPDATE messages SET kind = 'compaction_summary'
        WHERE role = 'user' AND instr(content, '[对话摘要]') = 1;
    -- what the user typed, when the stored content adds an instruction to it (a /skill call)
    ALTER TABLE messages ADD COLUMN shown TEXT;
    UPDATE messages SET shown = substr(content, 1, instr(content, char(10, 10) || '[用户调用了技能') - 1)
        WHERE role = 'user' AND instr(content, char(10, 10) || '[用户调用了技能') > 0
    """,
    # 8: where a memory's text came from: 'user' (typed by the user), 'model' (written by the
    # model from a conversation or memories without tool results) or 'tool_output' (its source
    # held tool results: data, never the user's words); memories of unknown origin count as
    # tool output
    """
    ALTER TABLE agent_memory ADD COLUMN provenance TEXT NOT NULL DEFAULT 'tool_output';
    UPDATE agent_memory SET provenance = 'user' WHERE json_extract(metadata, '$.extractor') = 'user'
    """,
    # 9: the trade ledger: positions hold their exact cost basis in cents and any share count
    # (STAR lots, bonus shares), cash in cents, every fill with its fees, corporate actions
    # applied to held positions
    """
    CREATE TABLE positions_ledger (
        code TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        shares INTEGER NOT NULL CHECK (shares > 0),
        cost_price REAL NOT NULL CHECK (cost_price > 0),
        buy_dt TEXT NOT NULL,
        stop_loss REAL,
        cost_cents INTEGER NOT NULL CHECK (cost_cents > 0)
    );
    INSERT INTO positions_ledger
        SELECT code, name, shares, cost_price, buy_dt, stop_loss,
            max(1, CAST(round(shares * cost_price * 100) AS INTEGER))
        FROM positions;
    DROP TABLE positions;
    ALTER TABLE positions_ledger RENAME TO positions;
    ALTER TABLE portfolio_cash ADD COLUMN cents INTEGER;
    UPDATE portfolio_cash SET cents = CAST(round(amount * 100) AS INTEGER);
    CREATE TABLE fills (
        id INTEGER PRIMARY KEY,
        code TEXT NOT NULL,
        name TEXT NOT NULL,
        side TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
        shares INTEGER NOT NULL CHECK (shares > 0),
        price_mills INTEGER NOT NULL CHECK (price_mills > 0),
        trade_date TEXT NOT NULL,
        trade_time TEXT,
        value_cents INTEGER NOT NULL,
        commission_cents INTEGER NOT NULL,
        stamp_cents INTEGER NOT NULL,
        transfer_cents INTEGER NOT NULL,
        dividend_tax_cents INTEGER NOT NULL DEFAULT 0,
        realized_cents INTEGER,
        source TEXT NOT NULL
    );
    CREATE INDEX fills_code ON fills (code, trade_date);
    CREATE TABLE corporate_actions (
        id INTEGER PRIMARY KEY,
        code TEXT NOT NULL,
        ex_date TEXT NOT NULL,
        shares_before INTEGER NOT NULL,
        bonus_shares INTEGER NOT NULL,
        cash_cents INTEGER NOT NULL,
        UNIQUE (code, ex_date)
    )
    """,
    # 10: Latin tokens of 2+ characters (MA200, ST) as a search index, and the version of the
    # indexing rules each memory was indexed with: existing memories start at 0, so MemoryStore
    # re-indexes them (tokens, short stock names such as 茅台 -> codes) with the current rules
    """
    CREATE TABLE agent_memory_tokens (
        token TEXT NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES agent_memory (id) ON DELETE CASCADE,
        PRIMARY KEY (token, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX agent_memory_tokens_memory ON agent_memory_tokens (memory_id);
    ALTER TABLE agent_memory ADD COLUMN index_version INTEGER NOT NULL DEFAULT 0
    """,
    # 11: session search over what the user typed and the assistant answered: FTS5 trigram
    # over the text, FTS5 over its short terms (Chinese bigrams, Latin tokens); the messages
    # saved before are queued in a backlog the chat log indexes on the first search
    """
    CREATE VIRTUAL TABLE message_search USING fts5 (text, tokenize = 'trigram');
    CREATE VIRTUAL TABLE message_terms USING fts5 (terms, tokenize = 'unicode61');
    CREATE TABLE message_search_backlog (id INTEGER PRIMARY KEY);
    INSERT INTO message_search_backlog SELECT id FROM messages
        WHERE role IN ('user', 'assistant') AND kind IS NULL AND COALESCE(shown, content) != ''
    """,
    # 12: what a model call was for (chat, sub_agent, extraction, layers, compaction, test);
    # calls recorded before were all conversation turns or `model test`, counted as chat
    """
    ALTER TABLE usage ADD COLUMN purpose TEXT NOT NULL DEFAULT 'chat'
    """,
    # 13: tail-session checks (`wyckoff tail`): one verdict per stock, day and source (the last
    # run of the day), and what happened on the next trading day once it is known
    """
    CREATE TABLE tail_checks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        checked_at TEXT NOT NULL,
        day TEXT NOT NULL,
        source TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT,
        role TEXT NOT NULL,
        verdict TEXT NOT NULL,
        price REAL,
        reasons TEXT NOT NULL,
        unchecked TEXT NOT NULL,
        playbook TEXT,
        next_day TEXT,
        next_open_pct REAL,
        next_close_pct REAL,
        UNIQUE (day, source, code)
    );
    CREATE INDEX tail_checks_code ON tail_checks (code, day)
    """,
    # 14: the trading day's routine (#28): the watchlist and its change log, alert rules and
    # the alerts they fired (one per rule, stock and date), push channels (environment
    # variable names only, never their values), schedules and their runs (one per schedule
    # and day), and approvals that scheduled runs left for the user
    """
    CREATE TABLE watchlist (
        code TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        note TEXT NOT NULL DEFAULT '',
        added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    );
    CREATE TABLE watchlist_changes (
        id INTEGER PRIMARY KEY,
        ts TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        code TEXT NOT NULL,
        before TEXT,
        after TEXT,
        undone INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE alert_rules (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        threshold REAL,
        direction TEXT,
        cooldown_days INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    );
    CREATE TABLE alert_events (
        id INTEGER PRIMARY KEY,
        rule_id INTEGER NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
        code TEXT NOT NULL,
        name TEXT NOT NULL,
        date TEXT NOT NULL,
        message TEXT NOT NULL,
        fired_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        UNIQUE (rule_id, code, date)
    );
    CREATE INDEX alert_events_date ON alert_events (date);
    CREATE TABLE notify_channels (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        url_env TEXT NOT NULL,
        secret_env TEXT
    );
    CREATE TABLE schedules (
        name TEXT PRIMARY KEY,
        at TEXT NOT NULL,
        days TEXT NOT NULL,
        kind TEXT NOT NULL,
        command TEXT NOT NULL,
        paused INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE schedule_runs (
        id INTEGER PRIMARY KEY,
        schedule TEXT NOT NULL,
        day TEXT NOT NULL,
        status TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        pid INTEGER,
        started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        finished_at TEXT,
        UNIQUE (schedule, day)
    );
    CREATE TABLE pending_approvals (
        id INTEGER PRIMARY KEY,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        description TEXT NOT NULL,
        origin TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        expires_at TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        decided_at TEXT,
        result TEXT
    )
    """,
    # 15: cash moved in or out by `portfolio cash` (a deposit is no return of the daily NAV):
    # the day (YYYYMMDD; NULL for the opening balance, set before the first fill) and the
    # amount in cents, + in, - out
    """
    CREATE TABLE cash_flows (
        id INTEGER PRIMARY KEY,
        flow_date TEXT,
        cents INTEGER NOT NULL
    )
    """,
    # 16: the day a position's share count was stated by the user (`add`, `update` of shares or
    # cost, a broker's holdings import): the book is true as of that day, so no ex-date on or
    # before it is applied to the position. Positions from before: the day (China time) of
    # their newest such change in the history; NULL when fills alone made them
    """
    ALTER TABLE positions ADD COLUMN booked_dt TEXT;
    UPDATE positions SET booked_dt = (
        SELECT strftime('%Y%m%d', max(h.ts), '+8 hours') FROM portfolio_history h
        WHERE h.undone = 0 AND (
            (h.code = positions.code AND h.action = 'add')
            OR (h.code = positions.code AND h.action = 'update' AND (
                json_extract(h.after, '$.shares') IS NOT json_extract(h.before, '$.shares')
                OR json_extract(h.after, '$.cost_price')
                    IS NOT json_extract(h.before, '$.cost_price')))
            OR (h.action = 'import' AND json_array_length(h.after, '$.fill_ids') = 0
                AND EXISTS (SELECT 1 FROM json_each(h.after, '$.positions') AS p
                    WHERE json_extract(p.value, '$.code') = positions.code))
        )
    )
    """,
    # 17: a broker import's key per fill (broker_export.Delivery.key), so importing the same
    # rows again books nothing. Fills imported before are keyed by their fields, numbered in
    # the order they were booked; fills typed in by hand have none
    """
    ALTER TABLE fills ADD COLUMN import_key TEXT;
    UPDATE fills SET import_key = keyed.key FROM (
        SELECT id, identity || ' #' || row_number() OVER (PARTITION BY identity ORDER BY id) AS key
        FROM (
            SELECT id, trade_date || ' ' || coalesce(trade_time, '-') || ' ' || code || ' '
                || side || ' ' || shares || ' ' || price_mills || ' ' || value_cents AS identity
            FROM fills WHERE source = 'import'
        )
    ) AS keyed WHERE fills.id = keyed.id;
    CREATE UNIQUE INDEX fills_import_key ON fills (import_key)
    """,
    # 18: the paper account (#36): a second book that follows the default strategy day by day,
    # in its own tables so no reader of the real portfolio can mistake a paper holding for a
    # real one. Days are YYYYMMDD as the ledger's; money in cents; `source` the market it
    # follows (a switch of `data use` does not mix two markets in one account).
    """
    CREATE TABLE paper_account (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        source TEXT NOT NULL,
        capital_cents INTEGER NOT NULL,
        cash_cents INTEGER NOT NULL,
        start_date TEXT NOT NULL,
        last_date TEXT
    );
    CREATE TABLE paper_positions (
        code TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        shares INTEGER NOT NULL,
        entry_date TEXT NOT NULL,
        cost_cents INTEGER NOT NULL
    );
    CREATE TABLE paper_fills (
        id INTEGER PRIMARY KEY,
        trade_date TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT NOT NULL,
        side TEXT NOT NULL,
        shares INTEGER NOT NULL,
        price_cents INTEGER NOT NULL,
        value_cents INTEGER NOT NULL,
        commission_cents INTEGER NOT NULL,
        stamp_cents INTEGER NOT NULL,
        transfer_cents INTEGER NOT NULL,
        realized_cents INTEGER,
        reason TEXT NOT NULL
    );
    CREATE TABLE paper_orders (
        id INTEGER PRIMARY KEY,
        decided_date TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        fill_date TEXT,
        reason TEXT
    );
    CREATE TABLE paper_nav (
        day TEXT PRIMARY KEY,
        nav_cents INTEGER NOT NULL,
        cash_cents INTEGER NOT NULL
    );
    """,
    # 19: the scorecard (#36): every piece of advice as it was given (kind, stock, as-of day,
    # buy/sell/avoid, the market store it was given on), never updated; its entry at the
    # next open and its outcome per horizon, each row written once when its days have come
    """
    CREATE TABLE scorecard_items (
        id INTEGER PRIMARY KEY,
        recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        kind TEXT NOT NULL,
        code TEXT NOT NULL,
        name TEXT,
        as_of TEXT NOT NULL,
        advice TEXT NOT NULL CHECK (advice IN ('buy', 'sell', 'avoid')),
        source TEXT NOT NULL,
        price REAL,
        stop REAL,
        note TEXT NOT NULL DEFAULT '',
        UNIQUE (kind, code, as_of, advice, source)
    );
    CREATE INDEX scorecard_items_code ON scorecard_items (code, as_of);
    CREATE TABLE scorecard_entries (
        item_id INTEGER PRIMARY KEY REFERENCES scorecard_items (id),
        entry_date TEXT NOT NULL,
        entry_price REAL,
        unfillable TEXT
    );
    CREATE TABLE scorecard_outcomes (
        item_id INTEGER NOT NULL REFERENCES scorecard_items (id),
        horizon INTEGER NOT NULL,
        exit_date TEXT NOT NULL,
        stock_return REAL NOT NULL,
        market_return REAL,
        csi300_return REAL,
        mfe REAL,
        mae REAL,
        stop_hit INTEGER,
        PRIMARY KEY (item_id, horizon)
    )
    """,
)


class Store:
    """Thread-safe access to the state db: each thread gets its own connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._migrate_lock = threading.Lock()
        self._migrated = False

    @classmethod
    def in_home(cls, home: Path) -> Store:
        return cls(home / DB_FILE)

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        if not self._migrated:
            self._migrate(conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise WyckoffError(
                f"无法打开状态数据库 {self.path}：{exc}。请检查文件权限或磁盘空间。"
            ) from None
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._migrate_lock:
            if self._migrated:
                return
            # The version is read inside the write lock: other processes may be migrating too.
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > len(MIGRATIONS):
                    raise WyckoffError(
                        f"状态数据库 {self.path} 来自更新版本的 Wyckoff（版本 {version}），"
                        "请升级 Wyckoff 后再用。"
                    )
                for number in range(version + 1, len(MIGRATIONS) + 1):
                    for statement in _statements(MIGRATIONS[number - 1]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self._migrated = True

    def transaction(self) -> _Transaction:
        """`with store.transaction() as conn:` — all or nothing."""
        return _Transaction(self.conn)

    @contextmanager
    def rolled_back(self) -> Iterator[sqlite3.Connection]:
        """`with store.rolled_back() as conn:` — writes are seen inside the block and none is
        kept (a preview: what a change would do, with nothing changed)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        finally:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def _statements(script: str) -> list[str]:
    """Split a migration into statements (migrations hold no semicolons inside strings)."""
    return [part.strip() for part in script.split(";") if part.strip()]
