"""Whether an imported stock is listed or delisted, and since when (`data import`).

A file may say so itself: a `list_status` column (L, D or P), a `delist_date` column (a
date: delisted), or a last name carrying 退. Otherwise the store infers it from its bars, on
the whole store after every import: a stock whose last bar is more than DELISTED_AFTER_DAYS
trading days before the store's last day is delisted at its last bar. Real delistings
without a 退 name (a face-value or *ST delisting ends with no 退市整理 days) stop like that.

Why on the whole store and not on a loaded window: the backtest reads the status as a
property of the stock (engine/backtest.py `delisted`), the same in every window. Inferred
from a window, a suspension that crosses the window's end would read as a delisting in a
walk-forward's training window but not in the full run, and the training would see the test
period. Why 20 trading days: since 2018 the exchanges cap a planned suspension at 10
trading days (5 for most matters), so a stock silent for a month at the store's end has
almost surely stopped for good; a longer real suspension (common before 2018) only matters
when it crosses the store's last day, and the file's columns correct it. A delisting in the
store's last 20 days is read as a suspension: the holding is marked at its last close.
"""

from __future__ import annotations

import pandas as pd

from wyckoff.errors import UsageError

DELISTED_AFTER_DAYS = 20
STATUSES = ("L", "D", "P")
GIVEN, INFERRED = "file", "bars"  # stocks.status_source: who said so


def given_status(frame: pd.DataFrame, dates: pd.Series, file: str) -> pd.DataFrame:
    """Per code (index), what the file says: list_status, delist_date (YYYY-MM-DD) and
    status_source (GIVEN where it says anything, else None: inferred after the write).
    `frame` holds the file's rows with a `code` column already normalized."""
    status = _statuses(frame, file)
    delist = _delist_dates(frame, file)
    rows = pd.DataFrame({"code": frame["code"], "date": dates, "s": status, "d": delist})
    last = rows.sort_values("date").groupby("code")[["s", "d"]].last()  # last non-null each
    if "name" in frame:
        names = frame.assign(date=dates).sort_values("date").groupby("code")["name"].last()
        named = names.astype("string").str.contains("退").fillna(False).astype(bool)
        last["s"] = last["s"].where(last["s"].notna() | ~named.reindex(last.index), "D")
    last["s"] = last["s"].where(last["s"].notna() | last["d"].isna(), "D")
    given = last["s"].notna()
    return pd.DataFrame(
        {
            "list_status": last["s"].astype(object).where(given, None),
            "delist_date": last["d"].astype(object).where(last["d"].notna(), None),
            "status_source": [GIVEN if g else None for g in given],
        },
        index=last.index,
    )


def _statuses(frame: pd.DataFrame, file: str) -> pd.Series:
    if "list_status" not in frame:
        return pd.Series(None, index=frame.index, dtype=object)
    text = frame["list_status"].astype("string").str.strip().str.upper().replace("", pd.NA)
    bad = text.notna() & ~text.isin(STATUSES)
    if bad.any():
        row = bad.idxmax()
        raise UsageError(
            f"{file} 第 {int(row) + 2} 行的 list_status 是 '{frame['list_status'][row]}'："
            "应为 L（上市）、D（退市）、P（暂停上市）或留空，没有写入任何数据。"
        )
    return text.astype(object).where(text.notna(), None)


def _delist_dates(frame: pd.DataFrame, file: str) -> pd.Series:
    if "delist_date" not in frame:
        return pd.Series(None, index=frame.index, dtype=object)
    text = frame["delist_date"].astype("string").str.strip().replace("", pd.NA)
    dates = pd.to_datetime(
        text.str.replace(r"[/.]", "-", regex=True), format="mixed", errors="coerce"
    )
    bad = text.notna() & dates.isna()
    if bad.any():
        row = bad.idxmax()
        raise UsageError(
            f"{file} 第 {int(row) + 2} 行的 delist_date 是 '{frame['delist_date'][row]}'，无法识别："
            "请用 YYYY-MM-DD 或 YYYYMMDD，未退市的留空，没有写入任何数据。"
        )
    return dates.dt.strftime("%Y-%m-%d").astype(object).where(dates.notna(), None)


# The trading days after each stock's last bar (0: it traded on the store's last day).
_SILENT_DAYS = """
    SELECT l.code, CAST(l.final AS VARCHAR) AS final, d.after FROM
        (SELECT code, MAX(date) AS final FROM bars GROUP BY code) l
    JOIN (SELECT date, row_number() OVER (ORDER BY date DESC) - 1 AS after
          FROM (SELECT DISTINCT date FROM bars)) d ON d.date = l.final"""


def infer_delistings(conn) -> int:
    """Set the status of every stock the files said nothing about: delisted at its last bar
    when more than DELISTED_AFTER_DAYS trading days passed since, else listed (a later
    import that brings new bars undoes it). Runs in the import's transaction; returns the
    stocks now read as delisted from their bars."""
    conn.execute(
        f"""UPDATE stocks SET
            list_status = CASE WHEN s.after > {DELISTED_AFTER_DAYS} THEN 'D' ELSE 'L' END,
            delist_date = CASE WHEN s.after > {DELISTED_AFTER_DAYS} THEN s.final END,
            status_source = '{INFERRED}'
        FROM ({_SILENT_DAYS}) s
        WHERE stocks.code = s.code AND stocks.status_source IS DISTINCT FROM '{GIVEN}'"""
    )
    (count,) = conn.execute(
        f"SELECT COUNT(*) FROM stocks WHERE status_source = '{INFERRED}' AND list_status = 'D'"
    ).fetchone()
    return int(count)
