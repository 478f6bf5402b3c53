"""The trading days a backtest covers, and the history loaded before them.

A backtest runs exactly the window asked for: from the first trading day on or after `start`
to the last one on or before `end` (by default the 250 trading days before the latest, or fewer when the store holds less). Its
first signal day needs WARMUP_DAYS of history before it (the longest indicator windows: the
250-day low and volume quantile, MA200), so those are loaded too. When the store lacks
some of these days the backtest does not run a shorter window: it names the missing dates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wyckoff.errors import WyckoffError

WARMUP_DAYS = 250
DEFAULT_DAYS = 250
SYNC_MAX_DAYS = 3000  # `wyckoff data sync --days` accepts at most this


class MissingHistory(WyckoffError):
    """The store lacks trading days the window asked for needs."""


@dataclass(frozen=True)
class Window:
    start: str  # first trading day of the backtest (its first signal day)
    end: str  # last trading day
    days: int  # trading days to load up to `end`: the window and its warm-up


def backtest_window(
    dates: np.ndarray,
    start: str | None,
    end: str | None,
    open_days: np.ndarray | None = None,
    source: str = "tushare",
) -> Window:
    """The window for `start`..`end` (YYYY-MM-DD or None) over the store's bar dates
    (sorted datetime64[D]); `open_days` are the days its calendar knows as open, used to tell
    a holiday after the last bar from a missing day. `source` (the store's; a synced one by
    default) says how missing days could be brought: a sync, an import of the user's files,
    or not at all (demo)."""
    days = [str(d) for d in dates]
    if not days:
        first = (
            "用 `wyckoff data import FILE` 导入"
            if source == "import"
            else "运行 `wyckoff data sync`"
        )
        raise MissingHistory(f"行情库里还没有日线：先{first}。")
    end_i = _last_on_or_before(days, end, open_days, source)
    if start and start > days[end_i]:
        last = "行情的最后一天" if end_i == len(days) - 1 else "结束日期前的最后一个交易日"
        raise MissingHistory(f"开始日期 {start} 晚于{last} {days[end_i]}：请选更早的开始日期。")
    start_i = _first_on_or_after(days, start) if start else max(end_i - DEFAULT_DAYS, WARMUP_DAYS)
    if start_i < WARMUP_DAYS:
        raise MissingHistory(_warmup_missing(days, start, start_i, end_i, source))
    if start_i >= end_i and not start:
        remedy = _fill_earlier(source, WARMUP_DAYS + DEFAULT_DAYS, days[0])
        raise MissingHistory(
            f"行情历史不足：回测需要 {WARMUP_DAYS} 个交易日预热再加至少 2 个交易日，行情库截至 "
            f"{days[end_i]} 只有 {end_i + 1} 个交易日（自 {days[0]} 起）"
            + (f"：{remedy}。" if remedy else "。")
        )
    if start_i >= end_i:
        raise MissingHistory(
            f"开始日期 {start} 与结束日期 {days[end_i]} 之间没有可回测的交易日：请让开始日期早于结束日期。"
        )
    return Window(days[start_i], days[end_i], end_i - start_i + 1 + WARMUP_DAYS)


def _last_on_or_before(
    days: list[str], end: str | None, open_days: np.ndarray | None, source: str
) -> int:
    if not end:
        return len(days) - 1
    if end < days[0]:
        raise MissingHistory(
            f"结束日期 {end} 早于行情库的第一天 {days[0]}：请选更晚的结束日期，或先同步更早的行情。"
        )
    missing = _open_days_after(days[-1], end, open_days)
    if missing:
        later = {"demo": "", "import": f"用 `wyckoff data import` 导入 {days[-1]} 之后的行情，或"}
        raise MissingHistory(
            f"行情库只到 {days[-1]}，缺少 {_span(missing)}的行情："
            f"{later.get(source, '运行 `wyckoff data sync` 更新，或')}把结束日期改为 {days[-1]} 或更早。"
        )
    return int(np.searchsorted(days, end, side="right")) - 1


def _first_on_or_after(days: list[str], start: str) -> int:
    return int(np.searchsorted(days, start, side="left"))


def _open_days_after(last: str, end: str, open_days: np.ndarray | None) -> list[str]:
    """Trading days after `last` up to `end`: the calendar's open days, and weekdays past
    the end of the calendar."""
    known = [] if open_days is None else [str(d) for d in open_days]
    beyond = max([last, *known])
    weekdays = np.arange(np.datetime64(beyond) + 1, np.datetime64(end) + 1, dtype="datetime64[D]")
    weekdays = weekdays[np.is_busday(weekdays)]
    return [d for d in known if last < d <= end] + [str(d) for d in weekdays]


def _warmup_missing(days: list[str], start: str, start_i: int, end_i: int, source: str) -> str:
    """Which history is missing before the window, and what to do: bring it (a sync or an
    import, by the store's source) or start later."""
    needed = len(days) - start_i + WARMUP_DAYS  # a sync counts back from the latest day
    if start < days[0]:  # the window itself starts before the store does
        missing = f"{start} 至 {days[0]} 之间的交易日以及更早的 {WARMUP_DAYS} 个交易日"
        needed += int(np.busday_count(start, days[0]))  # weekdays: at least the trading days
    else:
        missing = f"{days[0]} 之前的 {WARMUP_DAYS - start_i} 个交易日"
    remedies = [_fill_earlier(source, needed, days[0])]
    earliest = days[WARMUP_DAYS] if len(days) > WARMUP_DAYS + 1 else None
    if earliest and earliest < days[end_i]:
        remedies.append(f"把开始日期改为 {earliest} 或更晚")
    return (
        f"从 {start} 开始回测需要此前 {WARMUP_DAYS} 个交易日的行情预热指标，行情库最早只到 "
        f"{days[0]}，缺少 {missing}：{'，或'.join(filter(None, remedies)) or '请换一段行情库覆盖的区间'}。"
    )


def _fill_earlier(source: str, needed: int, first: str) -> str:
    """How to bring history before `first`: a sync of `needed` days back from the latest,
    an import of earlier bars (an import store cannot be synced), nothing on the demo market."""
    if source == "demo":
        return ""
    if source == "import":
        return f"用 `wyckoff data import` 导入 {first} 之前的行情补齐"
    if needed > SYNC_MAX_DAYS:
        return "同步或导入更早的行情补齐"
    return f"运行 `wyckoff data sync --days {needed}` 补齐"


def _span(missing: list[str]) -> str:
    return (
        missing[0]
        if len(missing) == 1
        else f"{missing[0]} 至 {missing[-1]}（共 {len(missing)} 天）"
    )
