"""What the rows of a `data import` file must be before anything is written: codes of exactly
six digits, dates from the market's first day to today (the market clock, WYCKOFF_NOW),
prices above 0 and at most MAX_PRICE with open and close inside the day's low-high range,
volume and amount finite and not negative, one row per code and day.

Every rule is checked on whole columns at once (no Python loop over rows); the first bad row
of the file and how many more there are make one sentence.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from datetime import date
from functools import reduce

import pandas as pd

from wyckoff.engine.clock import market_now
from wyckoff.errors import UsageError

PRICES = ("open", "high", "low", "close")
FIRST_MARKET_DAY = date(1990, 12, 19)  # the Shanghai exchange's first trading day
MAX_PRICE = 100_000.0  # yuan (or index points): no A-share or index has come near it
MAX_QUANTITY = 1e14  # shares or yuan in a day: above the whole market's busiest day
CODE = re.compile(r"^(?:(SH|SZ|BJ))?(\d{6})(?:\.(SH|SZ|BJ))?$")
NOT_WRITTEN = "没有写入任何数据"

# A rule's rows that break it, and what to say about one of them (after "第 N 行").
Rule = tuple[pd.Series, Callable[[int], str]]


class ImportFileError(UsageError):
    """The file cannot be imported; the message names the file, the row and what to do."""


def checked_bars(
    frame: pd.DataFrame, columns: tuple[str, ...], file: str, index: bool
) -> pd.DataFrame:
    """The required columns typed; any row that breaks a rule stops the whole import."""
    codes, bad_codes = _codes(frame["code"], index)
    dates = _dates(frame["date"])
    bars = pd.DataFrame({"code": codes, "date": dates})
    for column in columns[2:]:
        bars[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    rules: list[Rule] = [
        (bad_codes, lambda row: _bad_code(frame["code"][row])),
        (
            dates.isna(),
            lambda row: (
                f"的日期{_shown(frame['date'][row])}，无法识别：请用 YYYY-MM-DD 或 YYYYMMDD"
            ),
        ),
        _date_range(dates),
        *(_number_rule(bars[column], frame[column], column) for column in columns[2:]),
        _low_below_high(bars),
        _within_the_day(bars, "open"),
        _within_the_day(bars, "close"),
        _duplicates(bars),
    ]
    _refuse_first_bad_row(rules, file)
    return bars


def _refuse_first_bad_row(rules: list[Rule], file: str) -> None:
    broken = reduce(lambda a, b: a | b, (mask for mask, _ in rules))
    if not broken.any():
        return
    row = int(broken.idxmax())  # the first True: rows are numbered 0, 1, ... in file order
    said = next(say(row) for mask, say in rules if mask[row])
    more = int(broken.sum()) - 1
    also = f"；另有 {more} 行也有问题" if more else ""
    raise ImportFileError(f"{file} 第 {line_of(row)} 行{said}{also}，{NOT_WRITTEN}。")


def line_of(row: int) -> int:
    """The file line of a data row (line 1 is the header)."""
    return int(row) + 2


def _codes(values: pd.Series, index: bool) -> tuple[pd.Series, pd.Series]:
    """Codes as stored (600519; indices 000300.SH), None where a row has no valid code."""
    codes = _per_distinct_value(values, lambda value: _code(value, index))
    return codes, codes.isna()


def _code(value, index: bool) -> str | None:
    """A Parquet integer column lost its leading zeros, so only numbers are padded: the text
    '60051' is a typo, not 060051."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        whole = 0 <= value < 1e6 and value == int(value)
        text = f"{int(value):06d}" if whole else ""
    else:
        text = str(value).strip().upper()
    match = CODE.match(text)
    if not match:
        return None
    digits = match.group(2)
    if not index:
        return digits
    exchange = match.group(1) or match.group(3) or ("SZ" if digits.startswith("399") else "SH")
    return f"{digits}.{exchange}"


def _per_distinct_value(values: pd.Series, read: Callable) -> pd.Series:
    """`read` of every value, called once per distinct value: a file has a few thousand codes
    and dates over hundreds of thousands of rows."""
    positions, distinct = pd.factorize(values, use_na_sentinel=True)
    # a missing value's position is -1: it takes the None appended last
    read_values = pd.Series([read(value) for value in distinct] + [None], dtype=object)
    return pd.Series(read_values.to_numpy()[positions], index=values.index)


def _bad_code(value) -> str:
    text = "" if pd.isna(value) else str(value).strip()
    return (
        f"的代码 '{text}' 无效：应为完整的 6 位数字（如 600519，可写成 600519.SH 或 SH600519），"
        "请补全或改正"
    )


def _dates(values: pd.Series) -> pd.Series:
    """Dates at midnight, NaT where unreadable."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return pd.to_datetime(values).dt.tz_localize(None).dt.normalize()
    return pd.to_datetime(_per_distinct_value(values, _date), errors="coerce")


def _date(value) -> pd.Timestamp | None:
    text = re.sub(r"[/.]", "-", str(value).strip())
    day = pd.to_datetime(text, format="mixed", errors="coerce")
    return None if pd.isna(day) else day.tz_localize(None).normalize()


def _date_range(dates: pd.Series) -> Rule:
    today = market_now().date()
    outside = (dates < pd.Timestamp(FIRST_MARKET_DAY)) | (dates > pd.Timestamp(today))
    return (
        outside,
        lambda row: (
            f"的日期 {dates[row].date()} 不在 {FIRST_MARKET_DAY}（A 股第一个交易日）到今天 {today} 之间："
            "请改正这一行的日期"
        ),
    )


def _number_rule(parsed: pd.Series, values: pd.Series, column: str) -> Rule:
    """A number in every row (NaN: empty or not a number), within the column's range."""
    if column in PRICES or column == "pre_close":
        inside = (parsed > 0) & (parsed <= MAX_PRICE)
        need = f"大于 0、不超过 {MAX_PRICE:,.0f} 元的不复权价格"
    else:
        inside = (parsed >= 0) & (parsed <= MAX_QUANTITY)
        need = "不小于 0、不超过 100 万亿的数"
    return ~inside, lambda row: f"的 {column} {_shown(values[row])}：应为{need}"


def _low_below_high(bars: pd.DataFrame) -> Rule:
    low, high = bars["low"], bars["high"]
    return (
        low > high,
        lambda row: (
            f"的最低价 low {low[row]:g} 高于最高价 high {high[row]:g}：请检查这两列是否写反"
        ),
    )


def _within_the_day(bars: pd.DataFrame, column: str) -> Rule:
    """The open or the close lies between the day's low and high."""
    price, low, high = bars[column], bars["low"], bars["high"]
    return (
        (price < low) | (price > high),
        lambda row: (
            f"的 {column} {price[row]:g} 不在当日最低价 {low[row]:g} 与最高价 {high[row]:g} 之间："
            "请检查这一行的价格"
        ),
    )


def _duplicates(bars: pd.DataFrame) -> Rule:
    keys = ["code", "date"]
    later = bars.duplicated(keys, keep="first") & bars["code"].notna() & bars["date"].notna()

    def say(row: int) -> str:
        same = (bars["code"] == bars["code"][row]) & (bars["date"] == bars["date"][row])
        first = int(same.idxmax())
        return (
            f"与第 {line_of(first)} 行重复（{bars['code'][row]} {bars['date'][row].date()}）："
            "每个代码每天只能有一行"
        )

    return later, say


def _shown(value) -> str:
    return "为空" if pd.isna(value) or str(value).strip() == "" else f"是 '{value}'"
