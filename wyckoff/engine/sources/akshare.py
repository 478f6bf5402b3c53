"""akshare (optional extra): raw daily bars and dividend plans per stock; the reference
prior close is rebuilt from the dividends."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wyckoff.engine.sources.per_code import PerCodeSource, daily_frames, listing_frame
from wyckoff.engine.thresholds import MAIN_INDICES

AKSHARE_COLUMNS = {
    "日期": "date",
    "开盘": "open",
    "最高": "high",
    "最低": "low",
    "收盘": "close",
    "成交量": "volume",
    "成交额": "amount",
    "换手率": "turnover_rate",
}


def _akshare_listing(start: str, end: str) -> pd.DataFrame:
    import akshare as ak

    return akshare_listing(ak.stock_info_a_code_name())


def akshare_listing(frame: pd.DataFrame) -> pd.DataFrame:
    """stock_info_a_code_name (code, name): listed stocks only, no industry."""
    return listing_frame(
        pd.DataFrame(
            {
                "code": frame["code"].astype(str).str.zfill(6),
                "name": frame["name"],
                "industry": "未知",
                "list_date": None,
                "list_status": "L",
            }
        )
    )


def _akshare_fetch(codes: list[str], start: str, end: str) -> list[tuple[str, list, list]]:
    """Per stock: unadjusted stock_zh_a_hist records and its dividends (stock_fhps_detail_em).
    akshare's hfq prices are not used: they are not a clean multiplicative series."""
    import akshare as ak

    fetched = []
    for code in codes:
        raw = ak.stock_zh_a_hist(
            symbol=code,
            period="daily",
            start_date=start.replace("-", ""),
            end_date=end.replace("-", ""),
            adjust="",
        )
        dividends = ak.stock_fhps_detail_em(symbol=code)
        fetched.append((code, raw.to_dict("records"), dividends.to_dict("records")))
    return fetched


def _akshare_indices(start: str, end: str) -> pd.DataFrame:
    import akshare as ak

    fetched = {
        code: ak.stock_zh_index_daily(symbol=f"{code[-2:].lower()}{code[:6]}")
        for code in MAIN_INDICES
    }
    return akshare_index_frame(fetched, start, end)


def akshare_index_frame(fetched: dict[str, pd.DataFrame], start: str, end: str) -> pd.DataFrame:
    """index_bars from stock_zh_index_daily frames (date, open, high, low, close, volume;
    no amount), cut to the sync window."""
    frames = []
    for code, frame in fetched.items():
        frame = frame.assign(code=code, date=pd.to_datetime(frame["date"]), amount=np.nan)
        frames.append(frame[(frame["date"] >= start) & (frame["date"] <= end)])
    columns = ["code", "date", "open", "high", "low", "close", "volume", "amount"]
    return pd.concat(frames)[columns].reset_index(drop=True) if frames else pd.DataFrame()


def akshare_frames(fetched: list[tuple[str, list, list]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from stock_zh_a_hist records (Chinese columns; 成交量 in lots of
    100 shares, 成交额 in CNY, 换手率 in %) and stock_fhps_detail_em records. Its 涨跌额
    counts from the previous raw close, not the exchange's reference price, so pre_close is
    rebuilt from the dividends (`reference_prices`). It has no ST status per date."""
    frames = []
    for code, raw, dividends in fetched:
        frame = pd.DataFrame(raw).rename(columns=AKSHARE_COLUMNS)
        if frame.empty:
            continue
        frame = frame.assign(
            code=code,
            date=pd.to_datetime(frame["date"].astype(str)),
            close=pd.to_numeric(frame["close"]),
            volume=pd.to_numeric(frame["volume"]) * 100,
        )
        frames.append(reference_prices(frame, akshare_dividends(dividends)))
    return daily_frames(pd.concat(frames) if frames else None)


def akshare_dividends(records: list[dict]) -> pd.DataFrame:
    """ex_date, cash (CNY per share) and bonus (shares per share) of the carried-out plans
    (方案进度 实施分配) in stock_fhps_detail_em records, whose ratios are per 10 shares."""
    frame = pd.DataFrame(
        records, columns=["除权除息日", "方案进度", "现金分红-现金分红比例", "送转股份-送转总比例"]
    )
    frame = frame[frame["方案进度"].astype(str).str.contains("实施") & frame["除权除息日"].notna()]
    return pd.DataFrame(
        {
            "ex_date": pd.to_datetime(frame["除权除息日"].astype(str)),
            "cash": pd.to_numeric(frame["现金分红-现金分红比例"], errors="coerce").fillna(0) / 10,
            "bonus": pd.to_numeric(frame["送转股份-送转总比例"], errors="coerce").fillna(0) / 10,
        }
    )


def reference_prices(bars: pd.DataFrame, dividends: pd.DataFrame) -> pd.DataFrame:
    """One stock's bars (date order) with the exchange's reference prior close: the previous
    close, and on the first bar on or after an ex-date (close_prev - cash) / (1 + bonus)
    rounded to the cent, the exchange's formula; bonus_ratio is that bonus (0 elsewhere)."""
    bars = bars.sort_values("date").reset_index(drop=True)
    previous = bars["close"].shift(1)
    bonus = pd.Series(0.0, index=bars.index)
    cash = pd.Series(0.0, index=bars.index)
    for action in dividends.itertuples():
        on = bars.index[bars["date"] >= action.ex_date]
        if len(on) and on[0] > 0:  # an ex-date before the first bar changes nothing stored
            bonus[on[0]] += action.bonus
            cash[on[0]] += action.cash
    ex_rights = np.floor((previous - cash) / (1 + bonus) * 100 + 0.5) / 100
    reference = previous.where((bonus == 0) & (cash == 0), ex_rights)
    return bars.assign(pre_close=reference, bonus_ratio=bonus)


AKSHARE = PerCodeSource(_akshare_listing, _akshare_fetch, akshare_frames, _akshare_indices)


AKSHARE_MINUTE_COLUMNS = {
    "时间": "ts",
    "开盘": "open",
    "收盘": "close",
    "最高": "high",
    "最低": "low",
    "成交量": "volume",
    "成交额": "amount",
}


def akshare_minutes(code: str, day: str) -> list[dict]:
    """One-minute stock_zh_a_hist_min_em records of one stock and day (the source keeps
    about the last five trading days)."""
    import akshare as ak

    raw = ak.stock_zh_a_hist_min_em(
        symbol=code,
        start_date=f"{day} 09:00:00",
        end_date=f"{day} 15:00:00",
        period="1",
        adjust="",
    )
    return raw.to_dict("records")


def akshare_minute_frame(records: list[dict]) -> pd.DataFrame:
    """Minute bars from stock_zh_a_hist_min_em(period='1') records: 时间 'YYYY-MM-DD HH:MM:SS'
    at the bar's end (09:30 is the opening auction), 成交量 in lots of 100 shares, 成交额 in CNY."""
    frame = pd.DataFrame(records).rename(columns=AKSHARE_MINUTE_COLUMNS)
    if frame.empty:
        return pd.DataFrame(columns=list(AKSHARE_MINUTE_COLUMNS.values()))
    return frame.assign(ts=pd.to_datetime(frame["ts"]), volume=pd.to_numeric(frame["volume"]) * 100)
