"""The market store: a DuckDB file under WYCKOFF_HOME with bars, index bars, the stock list,
daily basics, the trade calendar and sync progress.

Synced data lives in `market.duckdb`, bars brought by `wyckoff data import` in
`market-import.duckdb` and the demo market in `market-demo.duckdb`, so they never mix.
Prices are stored raw with the exchange's reference prior close, their (hfq, cumulative)
price factor and share factor (see adjustment.py); panels are qfq-adjusted when loaded:
price x factor / latest factor, and volume by the share factor's inverse, so volumes stay
comparable across a bonus issue or split but not scaled by cash dividends. A missing price
factor takes the last known one of the stock. `daily_basic` holds the per-date facts: total and float market cap (CNY), turnover
rate (%), the ST flag and (when the source gives it) the name of that day; `names` keeps
only the days a stock's name changed, so a trade list can name a stock as it was called then.

Several processes share the file (the TUI open while `analyze` or `data sync` runs). DuckDB
lets one process write or many read, so connections are read-only unless they write, each
lasts one call (or one block of reads), and an open that meets another process's lock retries for up to
LOCK_WAIT_S before saying, in one sentence, that the store is busy.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.engine import adjustment
from wyckoff.errors import WyckoffError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from wyckoff.engine.panel import Panel

REAL_FILE = "market.duckdb"
DEMO_FILE = "market-demo.duckdb"
IMPORT_FILE = "market-import.duckdb"

SCHEMA = """
CREATE TABLE IF NOT EXISTS stocks (
    code VARCHAR PRIMARY KEY, name VARCHAR, industry VARCHAR, board VARCHAR,
    list_date VARCHAR, is_st BOOLEAN, market_cap DOUBLE, source VARCHAR);
ALTER TABLE stocks ADD COLUMN IF NOT EXISTS list_status VARCHAR;
ALTER TABLE stocks ADD COLUMN IF NOT EXISTS delist_date VARCHAR;
ALTER TABLE stocks ADD COLUMN IF NOT EXISTS status_source VARCHAR;
CREATE TABLE IF NOT EXISTS bars (
    code VARCHAR, date DATE, open DOUBLE, high DOUBLE, low DOUBLE, close DOUBLE,
    volume DOUBLE, amount DOUBLE, adj_factor DOUBLE DEFAULT 1.0, source VARCHAR,
    PRIMARY KEY (code, date));
ALTER TABLE bars ADD COLUMN IF NOT EXISTS pre_close DOUBLE;
ALTER TABLE bars ADD COLUMN IF NOT EXISTS share_factor DOUBLE;
ALTER TABLE bars ADD COLUMN IF NOT EXISTS bonus_ratio DOUBLE;
CREATE TABLE IF NOT EXISTS index_bars (
    code VARCHAR, date DATE, open DOUBLE, high DOUBLE, low DOUBLE, close DOUBLE,
    volume DOUBLE, amount DOUBLE, source VARCHAR, PRIMARY KEY (code, date));
CREATE TABLE IF NOT EXISTS daily_basic (
    code VARCHAR, date DATE, total_mv DOUBLE, turnover_rate DOUBLE, source VARCHAR,
    PRIMARY KEY (code, date));
ALTER TABLE daily_basic ADD COLUMN IF NOT EXISTS float_mv DOUBLE;
ALTER TABLE daily_basic ADD COLUMN IF NOT EXISTS is_st BOOLEAN;
ALTER TABLE daily_basic ADD COLUMN IF NOT EXISTS name VARCHAR;
CREATE TABLE IF NOT EXISTS names (
    code VARCHAR, start_date DATE, name VARCHAR, PRIMARY KEY (code, start_date));
CREATE TABLE IF NOT EXISTS trade_calendar (date DATE PRIMARY KEY, is_open BOOLEAN, source VARCHAR);
CREATE TABLE IF NOT EXISTS sync_state (key VARCHAR PRIMARY KEY, value VARCHAR);
"""

KEPT_PRE_CLOSE = """COALESCE(incoming.pre_close, (SELECT b.pre_close FROM bars b
    WHERE b.code = incoming.code AND b.date = incoming.date))"""

_LOCK = threading.Lock()  # one DuckDB connection at a time per process
LOCK_WAIT_S = 60.0
# Versions of files (device, inode, size, modification time, schema) this process found up to
# date: checking the catalogue costs ~12 ms per open, and a read does not change the file.
_CURRENT: set[tuple[int, int, int, int, str]] = set()


def _outdated(conn, schema: str = SCHEMA) -> bool:
    """Whether the file lacks a table or a column of `schema` (a file from an older version)."""
    tables = {row[0] for row in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    columns = set(conn.execute("SELECT table_name, column_name FROM duckdb_columns()").fetchall())
    wanted_tables = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", schema))
    wanted_columns = set(re.findall(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)", schema))
    return not (wanted_tables <= tables and wanted_columns <= columns)


class MarketStoreBusy(WyckoffError):
    """Another process held the market store for longer than LOCK_WAIT_S."""


class MarketStore:
    schema = SCHEMA  # the tables a file of this kind holds

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self.lock_wait_s: float | None = None  # waiting out another process's lock: LOCK_WAIT_S

    @classmethod
    def for_source(cls, home: Path, source: str) -> MarketStore:
        files = {"demo": DEMO_FILE, "import": IMPORT_FILE}
        return cls(home / files.get(source, REAL_FILE), source)

    def _connect(self, write: bool = False):
        """A connection for one call, read-only unless `write`, waiting out other processes."""
        import duckdb

        wait_s = LOCK_WAIT_S if self.lock_wait_s is None else self.lock_wait_s
        deadline = time.monotonic() + wait_s
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
                        f"等了 {wait_s:g} 秒仍未释放：请等它结束后再试。"
                    ) from None
            time.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, 0.5)

    def _open(self, write: bool):
        import duckdb

        if not write and not self.path.exists():
            self._open(write=True).close()  # a new file gets its schema first
        conn = duckdb.connect(str(self.path), read_only=not write)
        if write:
            conn.execute(self.schema)
            return conn
        stat = os.stat(self.path)
        known = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, self.schema)
        if known not in _CURRENT and _outdated(conn, self.schema):
            # a file from an older version: bring its schema up to date first
            conn.close()
            self._open(write=True).close()
            conn = duckdb.connect(str(self.path), read_only=True)
        _CURRENT.add(known)
        return conn

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """One read-only connection for every statement of a block (an open costs ~15 ms)."""
        with _LOCK:
            conn = self._connect()
            try:
                yield conn
            finally:
                conn.close()

    def execute(self, sql: str, params: list | None = None) -> list[tuple]:
        with self._reading() as conn:
            return conn.execute(sql, params or []).fetchall()

    def query_df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        with self._reading() as conn:
            return conn.execute(sql, params or []).df()

    def upsert(self, table: str, frame: pd.DataFrame) -> int:
        """Insert or replace rows (by primary key) in one transaction."""
        return self.write({table: frame})

    def write(
        self,
        frames: dict[str, pd.DataFrame],
        derive_price: bool | None = None,
        then: Callable[[Any], None] | None = None,
    ) -> int:
        """Insert or replace rows of several tables in one transaction (all or nothing);
        returns the rows written. When `derive_price` is not None, the factors of the stocks
        whose bars were written are recomputed in the same transaction (`refresh_factors`);
        `then(conn)` is a last step of the same transaction."""
        frames = {table: frame for table, frame in frames.items() if not frame.empty}
        if not frames:
            return 0
        with _LOCK:
            conn = self._connect(write=True)
            try:
                conn.execute("BEGIN")
                for table, frame in frames.items():
                    self._insert(conn, table, frame)
                if derive_price is not None and "bars" in frames:
                    adjustment.refresh_factors(conn, frames["bars"]["code"].tolist(), derive_price)
                basics = frames.get("daily_basic")
                if basics is not None and "name" in basics:
                    _refresh_names(conn, basics["code"].unique().tolist())
                if then is not None:
                    then(conn)
                conn.execute("COMMIT")
            finally:
                conn.close()  # without COMMIT the transaction is rolled back
        return sum(len(frame) for frame in frames.values())

    def refresh_factors(self, codes: list[str], derive_price: bool) -> None:
        """Recompute the factors of `codes` from their stored bars (see adjustment.py)."""
        if not codes:
            return
        with _LOCK:
            conn = self._connect(write=True)
            try:
                adjustment.refresh_factors(conn, codes, derive_price)
            finally:
                conn.close()

    def _insert(self, conn, table: str, frame: pd.DataFrame) -> None:
        if "source" not in frame and table != "sync_state":
            frame = frame.assign(source=self.source)
        columns = ", ".join(frame.columns)
        # A bar fetched without the day before (the first of a window) keeps its stored
        # reference price: the factor chain must not break where two syncs meet.
        kept = KEPT_PRE_CLOSE if table == "bars" else "pre_close"
        values = ", ".join(kept if c == "pre_close" else c for c in frame.columns)
        conn.register("incoming", frame)
        conn.execute(f"INSERT OR REPLACE INTO {table} ({columns}) SELECT {values} FROM incoming")
        conn.unregister("incoming")

    def set_state(self, key: str, value: str) -> None:
        import pandas as pd

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
        with self._reading() as conn:
            (stocks, delisted) = conn.execute(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE list_status IN ('D', 'P')) FROM stocks"
            ).fetchone()
            bars, coded, first, last = conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT code), MIN(date), MAX(date) FROM bars"
            ).fetchone()
            (indices,) = conn.execute("SELECT COUNT(DISTINCT code) FROM index_bars").fetchone()
            origins = conn.execute(
                "SELECT source, COUNT(*) FROM bars GROUP BY source ORDER BY source"
            ).fetchall()
            caveats = [] if self.source == "demo" else data_caveats(conn)
        return {
            "source": self.source,
            "file": str(self.path),
            "exists": True,
            "stocks": stocks,
            "delisted_or_suspended": delisted,
            "stocks_with_bars": coded,
            "bars": bars,
            "bar_sources": {str(origin): count for origin, count in origins},
            "indices": indices,
            "first_date": str(first) if first else None,
            "last_date": str(last) if last else None,
            "size_mb": round(self.path.stat().st_size / 1e6, 1),
            "caveats": caveats,
        }

    def stocks(self) -> pd.DataFrame:
        return self.query_df(
            "SELECT code, name, industry, board, list_date, is_st, market_cap FROM stocks ORDER BY code"
        )

    def trading_dates(self) -> np.ndarray:
        """Every day the store knows as open, oldest first: its calendar's open days and every
        date with bars (as datetime64[D]; read without pandas, which a warm screen never needs)."""
        import numpy as np

        rows = self.execute(
            "SELECT date FROM trade_calendar WHERE is_open UNION SELECT date FROM bars ORDER BY date"
        )
        return np.array([day for (day,) in rows], dtype="datetime64[D]")

    def bar_dates(self) -> pd.DataFrame:
        """Every date with bars, oldest first."""
        return self.query_df("SELECT DISTINCT date FROM bars ORDER BY date")

    def index_history(self, code: str, days: int) -> pd.DataFrame:
        """The index's last `days` daily bars, oldest first."""
        return self.query_df(
            "SELECT date, open, high, low, close, volume, amount FROM index_bars WHERE code = ? ORDER BY date DESC LIMIT ?",
            [code, days],
        ).iloc[::-1]

    def load_panel(
        self, days: int = 400, codes: list[str] | None = None, end: str | None = None
    ) -> Panel:
        """The last `days` trading days up to `end` as a qfq-adjusted Panel."""
        from wyckoff.engine.panel import panel_from_long

        with self._reading() as conn:
            end_clause = "WHERE date <= ?" if end else ""
            params: list = [end] if end else []
            window = conn.execute(
                f"SELECT MIN(date) FROM (SELECT DISTINCT date FROM bars {end_clause} ORDER BY date DESC LIMIT {int(days)})",
                params,
            ).fetchone()[0]
            if window is None:
                raise LookupError("empty store")
            bars = _fetch_bars(conn, window, end, codes)
            stocks = conn.execute(STOCKS_WITH_FINAL_DAY).df()
            index_bars = conn.execute(
                f"SELECT code, date, close FROM index_bars WHERE date >= ? {'AND date <= ?' if end else ''}",
                [window] + ([end] if end else []),
            ).df()
            caveats = [] if self.source == "demo" else data_caveats(conn)
        return panel_from_long(bars, stocks.set_index("code"), index_bars, self.source, caveats)


# A delisted stock's final trading day (its last bar in the store, or a later delisting date
# the import file gave: it is held suspended until then), known to every window,
# and a renamed stock's names by date ("2015-01-05 美讯股份|2019-05-06 ST美讯", see
# StockList.name_on).
STOCKS_WITH_FINAL_DAY = """
SELECT s.code, s.name, s.industry, s.board, s.list_date, s.is_st, s.market_cap, s.list_status,
    CAST(GREATEST(f.final, CAST(s.delist_date AS DATE)) AS VARCHAR) AS last_trade_date,
    n.history AS name_history
FROM stocks s LEFT JOIN (
    SELECT code, MAX(date) AS final FROM bars
    WHERE code IN (SELECT code FROM stocks WHERE list_status = 'D') GROUP BY code
) f USING (code) LEFT JOIN (
    SELECT code, string_agg(strftime(start_date, '%Y-%m-%d') || ' ' || name, '|'
        ORDER BY start_date) AS history
    FROM names GROUP BY code HAVING COUNT(*) > 1
) n USING (code)"""


def _refresh_names(conn, codes: list[str]) -> None:
    """The `names` table of `codes` rebuilt from their per-date names in daily_basic: one row
    per run of days under one name (a few per stock against thousands of daily rows)."""
    import pandas as pd

    conn.register("written", pd.DataFrame({"code": codes}))
    conn.execute("DELETE FROM names WHERE code IN (SELECT code FROM written)")
    conn.execute(
        """INSERT INTO names SELECT code, date, name FROM (
            SELECT code, date, name, lag(name) OVER (PARTITION BY code ORDER BY date) AS before
            FROM daily_basic WHERE name IS NOT NULL AND code IN (SELECT code FROM written))
        WHERE before IS NULL OR before <> name"""
    )
    conn.unregister("written")


def _fetch_bars(conn, window, end: str | None, codes: list[str] | None) -> dict[str, Any]:
    """Bars from `window` to `end` as numpy columns: qfq prices, volume on today's share
    basis (the share factor; the price factor where a store has none), the raw close and (when the store has them) the per-date facts. The gap-filling
    window function and the daily_basic join run only when needed: they triple the time."""
    (gaps,) = conn.execute("SELECT COUNT(*) FROM bars WHERE adj_factor IS NULL").fetchone()
    (basics,) = conn.execute("SELECT COUNT(*) FROM daily_basic").fetchone()
    code_clause = f" AND code IN ({', '.join('?' for _ in codes)})" if codes else ""
    # A gap needs the history before the window: its factor is the last one known.
    since = "" if gaps else "AND date >= ?"
    facts = ""
    if basics:
        facts = (
            f", {_nan('d.total_mv')} AS total_mv, {_nan('d.float_mv')} AS float_mv,"
            f" {_nan('d.turnover_rate')} AS turnover_rate, {_nan('CAST(d.is_st AS DOUBLE)')} AS is_st"
            " FROM b JOIN latest l USING (code)"
            " LEFT JOIN daily_basic d ON d.code = b.code AND d.date = b.date"
        )
    # Integer codes and day numbers: string columns are the slow part of a fetch.
    return conn.execute(
        f"""WITH b AS (
            SELECT code, date, open, high, low, close, volume, amount,
                {FILLED_FACTOR if gaps else "adj_factor"} AS adj,
                COALESCE(share_factor, {FILLED_FACTOR if gaps else "adj_factor"}) AS shares
            FROM bars WHERE date <= COALESCE(?::DATE, DATE '9999-12-31') {since}{code_clause}),
        latest AS (SELECT code, arg_max(adj, date) AS adj, arg_max(shares, date) AS shares
            FROM b WHERE date >= ? GROUP BY code)
        SELECT CAST(b.code AS INTEGER) AS code, date_diff('day', DATE '1970-01-01', b.date) AS date,
            b.open * b.adj / l.adj AS open, b.high * b.adj / l.adj AS high,
            b.low * b.adj / l.adj AS low, b.close * b.adj / l.adj AS close,
            b.volume * l.shares / b.shares AS volume, b.amount, b.close AS raw_close
            {facts or "FROM b JOIN latest l USING (code)"}
        WHERE b.date >= ?""",
        [end, *([] if gaps else [window]), *(codes or []), window, window],
    ).fetchnumpy()


# A missing factor takes the last known one of the stock (else its first known one): a 1.0
# in the middle of a history would halve the price of a stock that once split 2-for-1.
FILLED_FACTOR = """COALESCE(adj_factor,
    last_value(adj_factor IGNORE NULLS) OVER (PARTITION BY code ORDER BY date
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
    first_value(adj_factor IGNORE NULLS) OVER (PARTITION BY code ORDER BY date
        ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), 1.0)"""


def _nan(column: str) -> str:
    """NULL as NaN: numpy arrays fetched from DuckDB would otherwise be masked."""
    return f"COALESCE({column}, 'NaN'::DOUBLE)"


def data_caveats(conn) -> list[str]:
    """Which engine rules the stored data weakens, one Chinese sentence each (empty when the
    store has every per-date fact)."""
    (stocks, industries, delisted, with_status) = conn.execute(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE industry IS NOT NULL AND industry <> '未知'),"
        " COUNT(*) FILTER (WHERE list_status IN ('D', 'P')), COUNT(*) FILTER (WHERE list_status IS NOT NULL)"
        " FROM stocks"
    ).fetchone()
    (bars, gaps, gap_codes) = conn.execute(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE adj_factor IS NULL),"
        " COUNT(DISTINCT code) FILTER (WHERE adj_factor IS NULL) FROM bars"
    ).fetchone()
    (total_mv, float_mv, turnover, st) = conn.execute(
        "SELECT COUNT(total_mv), COUNT(float_mv), COUNT(turnover_rate), COUNT(is_st) FROM daily_basic"
    ).fetchone()
    (indices,) = conn.execute("SELECT COUNT(DISTINCT code) FROM index_bars").fetchone()
    caveats = []
    if not bars:
        return caveats
    if not indices:
        caveats.append("指数：没有指数行情，第二层相对强弱只看个股自身涨幅，市场状态不看指数趋势。")
    if not total_mv and float_mv:
        caveats.append(
            "总市值：数据源不提供，第一层市值门槛改用流通市值（成交量 ÷ 换手率 × 收盘价逐日推算），"
            "流通市值小于总市值，门槛偏严。"
        )
    elif not total_mv:
        caveats.append(
            "市值：数据源不提供逐日市值，按股票列表中的最新市值 × 当日价格比例推算（假设股本不变）；"
            "没有市值的股票第一层只看成交额。"
        )
    if not turnover:
        caveats.append("换手率：数据源不提供，EVR 的换手率用当日成交额 ÷ 当日市值推算。")
    if not st:
        caveats.append("ST 标记：数据源没有逐日 ST 状态，历史上的 ST 按今天的名称判断。")
    if stocks and not industries:
        caveats.append("行业：数据源不提供行业分类，第三层板块共振不起作用（只看个股强度）。")
    if with_status and not delisted:
        caveats.append("股票池：不含退市和暂停上市的股票，回测有幸存者偏差。")
    elif not with_status:
        caveats.append("股票池：数据源没有上市状态，可能不含退市股票，回测可能有幸存者偏差。")
    if gaps:
        caveats.append(
            f"复权因子：缺失 {gaps} 条（{gap_codes} 只股票），已沿用该股前一个已知因子。"
        )
    return caveats + adjustment.factor_caveats(conn)
