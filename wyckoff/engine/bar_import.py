"""`wyckoff data import`: daily bars from a CSV or Parquet file into the import store.

Stock files carry unadjusted prices with the exchange's reference prior close (the factors
are derived from it, see adjustment.py), volume in shares and amount in CNY; optional
per-date `name` (ST/*ST/退 are read from it) or `is_st` (1/0), `float_mv`/`total_mv` (CNY),
`turnover_rate` (%), and `list_status`/`delist_date` (else inferred, see listing_status.py). Index files carry the same bars without `pre_close`. A file is checked
whole before anything is written, and written in one transaction: a bad file changes
nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd

from wyckoff.engine.bar_checks import PRICES, ImportFileError, checked_bars
from wyckoff.engine.listing_status import given_status, infer_delistings
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.thresholds import board_of
from wyckoff.errors import describe_os_error

STOCK_COLUMNS = ("code", "date", *PRICES, "pre_close", "volume", "amount")
INDEX_COLUMNS = ("code", "date", *PRICES, "volume", "amount")
OPTIONAL_FACTS = ("float_mv", "total_mv", "turnover_rate")
ST_FLAGS = {"1": True, "true": True, "0": False, "false": False}


def import_bars(store: MarketStore, path: Path, index: bool = False) -> dict[str, int]:
    """Check the file and write it to `store` in one transaction; returns what was written."""
    frame = read_table(path)
    columns = INDEX_COLUMNS if index else STOCK_COLUMNS
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ImportFileError(
            f"{path.name} 缺少列：{', '.join(missing)}。{'指数' if index else '个股'}文件必需的列是 "
            f"{','.join(columns)}，没有写入任何数据。"
        )
    bars = checked_bars(frame, columns, path.name, index)
    if index:
        written = store.write({"index_bars": bars})
        return {"index_bars": written, "indices": bars["code"].nunique()}
    status = given_status(frame.assign(code=bars["code"]), bars["date"], path.name)
    traded = bars["volume"] > 0  # a suspended day has no bar, as in a sync
    bars, frame = bars[traded], frame[traded]
    facts = _daily_basic(frame, bars)
    stocks = _stocks(frame, bars, status)
    inferred: list[int] = []
    store.write(
        {"bars": bars, "daily_basic": facts, "stocks": stocks},
        derive_price=True,
        then=lambda conn: inferred.append(infer_delistings(conn)),
    )
    return {"bars": len(bars), "stocks": len(stocks), "delisted_from_bars": inferred[0]}


def read_table(path: Path) -> pd.DataFrame:
    """The file's rows, every value as text (CSV) or as stored (Parquet), with lower-case
    column names; DuckDB reads both, so no Parquet library is needed."""
    import duckdb

    _readable_regular_file(path)
    reader = "read_parquet(?)" if path.suffix.lower() == ".parquet" else _CSV
    try:
        frame = duckdb.connect().execute(f"SELECT * FROM {reader}", [str(path)]).df()
    except duckdb.Error as exc:
        first_line = str(exc).strip().splitlines()[0][:200]
        raise ImportFileError(
            f"无法读取 {path.name}（{first_line}）：请提供带表头的 CSV（UTF-8，逗号分隔）或 Parquet 文件。"
        ) from None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    return frame


def _readable_regular_file(path: Path) -> None:
    """Refuse anything but a readable regular file, from its type alone: DuckDB would wait
    forever on a FIFO and read /dev/zero without end."""
    try:
        kind = os.stat(path).st_mode
        if stat.S_ISREG(kind):
            path.open("rb").close()  # unreadable (permissions) is said here, in Chinese
            return
    except FileNotFoundError:
        raise ImportFileError(f"找不到文件 {path}：请检查路径。") from None
    except OSError as exc:
        raise ImportFileError(describe_os_error(exc, "读取", path)) from None
    if stat.S_ISDIR(kind):
        what = "是一个文件夹：一次导入一个文件，请给出文件夹里 CSV 或 Parquet 文件的路径"
    elif stat.S_ISFIFO(kind):
        what = "是一个管道（FIFO），不是普通文件：请先把数据存成 CSV 或 Parquet 文件再导入"
    elif stat.S_ISCHR(kind) or stat.S_ISBLK(kind):
        what = "是一个设备，不是数据文件：请给出 CSV 或 Parquet 文件的路径"
    else:
        what = "不是普通文件：请给出 CSV 或 Parquet 文件的路径"
    raise ImportFileError(f"{path} {what}。")


_CSV = "read_csv(?, header = true, all_varchar = true, delim = ',')"


def _daily_basic(frame: pd.DataFrame, bars: pd.DataFrame) -> pd.DataFrame:
    """Per-date facts the file gives: caps, turnover rate, and the ST flag and name of the
    day (a stock named ST/*ST that day is ST that day)."""
    facts = bars[["code", "date"]].copy()
    for column in OPTIONAL_FACTS:
        if column in frame:
            facts[column] = pd.to_numeric(frame[column], errors="coerce")
    if "name" in frame:
        names = frame["name"].astype("string").str.strip()
        facts["name"] = names
        facts["is_st"] = names.str.upper().str.contains("ST").astype("boolean")
    if "is_st" in frame:  # a flag where the file has no names (1/0, true/false)
        flag = frame["is_st"].astype("string").str.strip().str.lower()
        facts["is_st"] = flag.map(ST_FLAGS).astype("boolean")
    return facts if len(facts.columns) > 2 else pd.DataFrame()


def _stocks(frame: pd.DataFrame, bars: pd.DataFrame, status: pd.DataFrame) -> pd.DataFrame:
    """The stock list: each code's last name in the file (its code when the file has none)
    and the listing status the file gives (listing_status.py; the rest is inferred)."""
    named = bars.assign(name=frame["name"].astype("string") if "name" in frame else pd.NA)
    last = named.sort_values("date").groupby("code").last()
    name = last["name"].fillna(pd.Series(last.index, index=last.index))
    status = status.reindex(last.index)
    return pd.DataFrame(
        {
            "code": last.index,
            "name": name.to_numpy(),
            "industry": "未知",
            "board": [board_of(c) for c in last.index],
            "list_date": None,
            "is_st": name.str.upper().str.contains("ST").to_numpy(),
            **{column: status[column].to_numpy() for column in status.columns},
        }
    )
