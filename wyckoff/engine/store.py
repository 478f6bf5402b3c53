"""The market store: a DuckDB file under WYCKOFF_HOME with bars, index bars, the stock list,
daily basics, the trade calendar and sync progress.

Real data lives in `market.duckdb`; the demo market in its own `market-demo.duckdb`, so the
two never mix. Prices are stored raw with their adjustment factor; panels are qfq-adjusted
(price x factor / latest factor) when loaded.

Several processes share the file (the TUI open while `analyze` or `data sync` runs). DuckDB
lets one process write or many read, so connections are read-only unless they write, each
lasts one call, and an open that meets another process's lock retries for up to
LOCK_WAIT_S before saying, in one sentence, that the store is busy.
"""

from __future__ import annotations

import random
import re
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

from wyckoff.engine.panel import Panel, panel_from_long
from wyckoff.errors import WyckoffError

REAL_FILE = "market.duckdb"
DEMO_FILE = "market-demo.duckdb"

SCHEMA = """
CREATE TABLE IF NOT EXISTS stocks (
    code VARCHAR PRIMARY KEY, name VARCHAR, industry VARCHAR, board VARCHAR,
    list_date VARCHAR, is_st BOOLEAN, market_cap DOUBLE, source VARCHAR);
CREATE TABLE IF NOT EXISTS bars (
    code VARCHAR, date DATE, open DOUBLE, high DOUBLE, low DOUBLE, close DOUBLE,
    volume DOUBLE, amount DOUBLE, adj_factor DOUBLE DEFAULT 1.0, source VARCHAR,
    PRIMARY KEY (code, date));
CREATE TABLE IF NOT EXISTS index_bars (
    code VARCHAR, date DATE, open DOUBLE, high DOUBLE, low DOUBLE, close DOUBLE,
    volume DOUBLE, amount DOUBLE, source VARCHAR, PRIMARY KEY (code, date));
CREATE TABLE IF NOT EXISTS daily_basic (
    code VARCHAR, date DATE, total_mv DOUBLE, turnover_rate DOUBLE, source VARCHAR,
    PRIMARY KEY (code, date));
CREATE TABLE IF NOT EXISTS trade_calendar (date DATE PRIMARY KEY, is_open BOOLEAN, source VARCHAR);
CREATE TABLE IF NOT EXISTS sync_state (key VARCHAR PRIMARY KEY, value VARCHAR);
"""

_LOCK = threading.Lock()  # one DuckDB connection at a time per process
LOCK_WAIT_S = 60.0


def _lacks_tables(conn) -> bool:
    present = {row[0] for row in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return not set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA)) <= present


class MarketStoreBusy(WyckoffError):
    """Another process held the market store for longer than LOCK_WAIT_S."""


class MarketStore:
    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source

    @classmethod
    def for_source(cls, home: Path, source: str) -> MarketStore:
        return cls(home / (DEMO_FILE if source == "demo" else REAL_FILE), source)

    def _connect(self, write: bool = False):
        """A connection for one call, read-only unless `write`, waiting out other processes."""
        import duckdb

        deadline = time.monotonic() + LOCK_WAIT_S
        pause = 0.02
        while True:
            try:
                return self._open(write)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    raise MarketStoreBusy(
                        f"行情库 {self.path.name} 正被另一个 Wyckoff 进程占用（例如 `wyckoff data sync`），"
                        f"等了 {LOCK_WAIT_S:g} 秒仍未释放：请等它结束后再试。"
                    ) from None
            time.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, 0.5)

    def _open(self, write: bool):
        import duckdb

        if not write and not self.path.exists():
            self._open(write=True).close()  # a new file gets its schema first
        conn = duckdb.connect(str(self.path), read_only=not write)
        if write:
            conn.execute(SCHEMA)
        elif _lacks_tables(conn):  # a file from an older version: add the new tables first
            conn.close()
            self._open(write=True).close()
            conn = duckdb.connect(str(self.path), read_only=True)
        return conn

    def execute(self, sql: str, params: list | None = None) -> list[tuple]:
        with _LOCK:
            conn = self._connect()
            try:
                return conn.execute(sql, params or []).fetchall()
            finally:
                conn.close()

    def query_df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        with _LOCK:
            conn = self._connect()
            try:
                return conn.execute(sql, params or []).df()
            finally:
                conn.close()

    def upsert(self, table: str, frame: pd.DataFrame) -> int:
        """Insert or replace rows (by primary key) in one transaction."""
        if frame.empty:
            return 0
        frame = frame.copy()
        if "source" not in frame and table != "sync_state":
            frame["source"] = self.source
        columns = ", ".join(frame.columns)
        with _LOCK:
            conn = self._connect(write=True)
            try:
                conn.register("incoming", frame)
                conn.execute("BEGIN")
                conn.execute(
                    f"INSERT OR REPLACE INTO {table} ({columns}) SELECT {columns} FROM incoming"
                )
                conn.execute("COMMIT")
            finally:
                conn.close()
        return len(frame)

    def set_state(self, key: str, value: str) -> None:
        self.upsert("sync_state", pd.DataFrame({"key": [key], "value": [value]}))

    def get_state(self, key: str) -> str | None:
        rows = self.execute("SELECT value FROM sync_state WHERE key = ?", [key])
        return rows[0][0] if rows else None

    def is_empty(self) -> bool:
        if not self.path.exists():
            return True
        return self.execute("SELECT COUNT(*) FROM bars")[0][0] == 0

    def status(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"source": self.source, "file": str(self.path), "exists": False}
        (stocks,) = self.execute("SELECT COUNT(*) FROM stocks")[0]
        bars, coded, first, last = self.execute(
            "SELECT COUNT(*), COUNT(DISTINCT code), MIN(date), MAX(date) FROM bars"
        )[0]
        (indices,) = self.execute("SELECT COUNT(DISTINCT code) FROM index_bars")[0]
        return {
            "source": self.source,
            "file": str(self.path),
            "exists": True,
            "stocks": stocks,
            "stocks_with_bars": coded,
            "bars": bars,
            "indices": indices,
            "first_date": str(first) if first else None,
            "last_date": str(last) if last else None,
            "size_mb": round(self.path.stat().st_size / 1e6, 1),
        }

    def stocks(self) -> pd.DataFrame:
        return self.query_df(
            "SELECT code, name, industry, board, list_date, is_st, market_cap FROM stocks ORDER BY code"
        )

    def load_panel(
        self, days: int = 400, codes: list[str] | None = None, end: str | None = None
    ) -> Panel:
        """The last `days` trading days up to `end` as a qfq-adjusted Panel."""
        with _LOCK:
            conn = self._connect()
            try:
                end_clause = "WHERE date <= ?" if end else ""
                params: list = [end] if end else []
                window = conn.execute(
                    f"SELECT MIN(date) FROM (SELECT DISTINCT date FROM bars {end_clause} ORDER BY date DESC LIMIT {int(days)})",
                    params,
                ).fetchone()[0]
                if window is None:
                    raise LookupError("empty store")
                code_clause = ""
                bar_params: list = [
                    window,
                    *([end] if end else []),
                    window,
                    *([end] if end else []),
                ]
                if codes:
                    code_clause = f" AND b.code IN ({', '.join('?' for _ in codes)})"
                    bar_params += list(codes)
                date_clause = "date >= ?" + (" AND date <= ?" if end else "")
                # Integer codes and day numbers: string columns are the slow part of a fetch.
                bars = conn.execute(
                    "SELECT CAST(b.code AS INTEGER) AS code, date_diff('day', DATE '1970-01-01', b.date) AS date,"
                    " b.open * b.adj_factor / l.adj AS open, b.high * b.adj_factor / l.adj AS high,"
                    " b.low * b.adj_factor / l.adj AS low, b.close * b.adj_factor / l.adj AS close, b.volume, b.amount"
                    f" FROM bars b JOIN (SELECT code, arg_max(adj_factor, date) AS adj FROM bars WHERE {date_clause} GROUP BY code) l"
                    f" USING (code) WHERE b.{date_clause}{code_clause}",
                    bar_params,
                ).fetchnumpy()
                stocks = conn.execute(
                    "SELECT code, name, industry, board, list_date, is_st, market_cap FROM stocks"
                ).df()
                index_bars = conn.execute(
                    f"SELECT code, date, close FROM index_bars WHERE date >= ? {'AND date <= ?' if end else ''}",
                    [window] + ([end] if end else []),
                ).df()
            finally:
                conn.close()
        return panel_from_long(bars, stocks.set_index("code"), index_bars, self.source)
