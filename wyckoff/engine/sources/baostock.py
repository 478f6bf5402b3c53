"""baostock (no token): raw k-data with the exchange's reference prior close, per stock."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wyckoff.engine.sources.per_code import PerCodeSource, daily_frames, listing_frame
from wyckoff.engine.thresholds import MAIN_INDICES

BAOSTOCK_FIELDS = "date,code,open,high,low,close,preclose,volume,amount,turn,tradestatus,isST"
INDEX_FIELDS = "date,code,open,high,low,close,volume,amount"


def _baostock_rows(result) -> list[list[str]]:
    rows = []
    while result.error_code == "0" and result.next():
        rows.append(result.get_row_data())
    if result.error_code != "0":
        raise RuntimeError(f"baostock 查询失败：{result.error_msg}")
    return rows


def _baostock_session():
    import baostock as bs

    login = bs.login()
    if login.error_code != "0":
        raise RuntimeError(f"baostock 登录失败：{login.error_msg}")
    return bs


def _baostock_listing(start: str, end: str) -> pd.DataFrame:
    bs = _baostock_session()
    try:
        basics = _baostock_rows(bs.query_stock_basic())
        industries = _baostock_rows(bs.query_stock_industry())
    finally:
        bs.logout()
    return baostock_listing(basics, industries, start, end)


def baostock_listing(
    basics: list[list[str]], industries: list[list[str]], start: str, end: str
) -> pd.DataFrame:
    """query_stock_basic rows (code, code_name, ipoDate, outDate, type, status) and
    query_stock_industry rows (updateDate, code, code_name, industry, industryClassification)
    -> the stocks table: A shares listed by `end`, delisted ones only if still trading
    after `start`."""
    frame = pd.DataFrame(basics, columns=["code", "name", "ipo", "out", "type", "status"])
    frame = frame[(frame["type"] == "1") & (frame["ipo"] <= end)]
    frame = frame[(frame["status"] == "1") | (frame["out"] >= start)]
    industry = {row[1]: row[3] for row in industries if row[3]}
    return listing_frame(
        pd.DataFrame(
            {
                "code": frame["code"].str[3:],
                "name": frame["name"],
                "industry": [industry.get(c, "未知") for c in frame["code"]],
                "list_date": frame["ipo"].str.replace("-", ""),
                "list_status": np.where(frame["status"] == "1", "L", "D"),
            }
        )
    )


def _baostock_fetch(codes: list[str], start: str, end: str) -> list[list[list[str]]]:
    """Per stock: unadjusted k-data rows (BAOSTOCK_FIELDS). baostock's own adjusted prices
    are not needed: the factors come from `preclose`."""
    bs = _baostock_session()
    fetched = []
    try:
        for code in codes:
            symbol = f"{'sh' if code.startswith('6') else 'sz'}.{code}"
            query = bs.query_history_k_data_plus(
                symbol,
                BAOSTOCK_FIELDS,
                start_date=start,
                end_date=end,
                frequency="d",
                adjustflag="3",
            )
            fetched.append(_baostock_rows(query))
    finally:
        bs.logout()
    return fetched


def _baostock_indices(start: str, end: str) -> pd.DataFrame:
    bs = _baostock_session()
    try:
        fetched = {
            code: _baostock_rows(
                bs.query_history_k_data_plus(
                    f"{code[-2:].lower()}.{code[:6]}",
                    INDEX_FIELDS,
                    start_date=start,
                    end_date=end,
                    frequency="d",
                    adjustflag="3",
                )
            )
            for code in MAIN_INDICES
        }
    finally:
        bs.logout()
    return baostock_index_frame(fetched)


def baostock_index_frame(fetched: dict[str, list[list[str]]]) -> pd.DataFrame:
    """index_bars from baostock index rows (INDEX_FIELDS, strings) per index code."""
    frames = [
        pd.DataFrame(rows, columns=INDEX_FIELDS.split(",")).assign(code=code)
        for code, rows in fetched.items()
        if rows
    ]
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames)
    for column in INDEX_FIELDS.split(",")[2:]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame.assign(date=pd.to_datetime(frame["date"])).reset_index(drop=True)


def baostock_frames(fetched: list[list[list[str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from baostock rows: all values are strings ('' when empty),
    preclose the exchange's reference price, volume in shares, amount in CNY, turn in %,
    tradestatus '1' = traded, isST '1' = ST."""
    frames = []
    for raw in fetched:
        frame = pd.DataFrame(raw, columns=BAOSTOCK_FIELDS.split(","))
        frames.append(
            frame[frame["tradestatus"] == "1"].assign(
                code=frame["code"].str[3:],
                pre_close=frame["preclose"],
                turnover_rate=frame["turn"],
                is_st=frame["isST"] == "1",
            )
        )
    return daily_frames(pd.concat(frames) if frames else None)


BAOSTOCK = PerCodeSource(_baostock_listing, _baostock_fetch, baostock_frames, _baostock_indices)


MINUTE_FIELDS = "date,time,code,open,high,low,close,volume,amount,adjustflag"
MINUTE_FREQ = 5  # baostock's shortest bar: 5, 15, 30 or 60 minutes


def baostock_minutes(code: str, day: str, freq: int = MINUTE_FREQ) -> list[list[str]]:
    """Unadjusted minute k-data rows (MINUTE_FIELDS) of one stock and day."""
    bs = _baostock_session()
    try:
        symbol = f"{'sh' if code.startswith('6') else 'sz'}.{code}"
        query = bs.query_history_k_data_plus(
            symbol, MINUTE_FIELDS, start_date=day, end_date=day, frequency=str(freq), adjustflag="3"
        )
        return _baostock_rows(query)
    finally:
        bs.logout()


def baostock_minute_frame(rows: list[list[str]]) -> pd.DataFrame:
    """Minute bars from baostock rows: strings, `time` as YYYYMMDDHHMMSSsss at the bar's end,
    volume in shares, amount in CNY."""
    frame = pd.DataFrame(rows, columns=MINUTE_FIELDS.split(","))
    frame["ts"] = pd.to_datetime(frame["time"].str[:12], format="%Y%m%d%H%M")
    for column in ("open", "high", "low", "close", "volume", "amount"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame
