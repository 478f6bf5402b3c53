"""The market's clock: where China's A-share trading day stands at a given minute.

Times are Beijing time. `market_now()` is the current minute there, or the minute set in
the `WYCKOFF_NOW` environment variable (ISO 8601, e.g. `2026-12-02T14:46:00+08:00`; a time
without a zone is read as Beijing time), which is how tests and rehearsals pin the clock.
Holidays come from the stored trading calendar (`open_days`); beyond it, weekdays are open.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from wyckoff.errors import UsageError

BEIJING = ZoneInfo("Asia/Shanghai")
NOW_ENV = "WYCKOFF_NOW"
OPEN_AUCTION = time(9, 15)
TAIL_START = time(14, 30)
CLOSE = time(15, 0)


@dataclass(frozen=True)
class Phase:
    key: str  # closed, pre_open, auction, morning, lunch, afternoon, tail, close_auction, after
    label: str  # 休市, 盘前, 集合竞价, ...
    trading_day: bool
    in_session: bool  # today's daily bar is still forming (from the open auction to 15:00)


# (start, key, label, in_session), in order through a trading day
_SCHEDULE = (
    (time(0, 0), "pre_open", "盘前", False),
    (OPEN_AUCTION, "auction", "集合竞价", True),
    (time(9, 30), "morning", "上午盘", True),
    (time(11, 30), "lunch", "午休", True),
    (time(13, 0), "afternoon", "下午盘", True),
    (TAIL_START, "tail", "尾盘", True),
    (time(14, 57), "close_auction", "收盘集合竞价", True),
    (CLOSE, "after", "收盘后", False),
)
CLOSED = Phase("closed", "休市", False, False)


def market_now(now: datetime | None = None) -> datetime:
    """`now` (or WYCKOFF_NOW, else the system clock) in Beijing time."""
    if now is None:
        pinned = os.environ.get(NOW_ENV, "").strip()
        now = parse_now(pinned) if pinned else datetime.now(BEIJING)
    if now.tzinfo is None:
        now = now.replace(tzinfo=BEIJING)
    return now.astimezone(BEIJING)


def parse_now(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"{NOW_ENV}={text!r} 不是 ISO 时间：请写成 2026-12-02T14:46:00+08:00 这样。"
        ) from None


def clock_time(text: str) -> time:
    """A wall-clock minute typed as `9:31` or `14:45`. ValueError: why it is not one, as a
    Chinese phrase the caller puts after the option's name."""
    found = re.fullmatch(r"(\d{1,2}):(\d{1,2})", text.strip())
    if found is None:
        raise ValueError("请写成 9:31 或 14:45 这样的 时:分")
    hour, minute = found.groups()
    if len(minute) == 1:
        raise ValueError(f"分钟要写两位，如 {hour}:0{minute}")
    if int(hour) > 23:
        raise ValueError("小时只能是 0 到 23")
    if int(minute) > 59:
        raise ValueError("分钟只能是 00 到 59")
    return time(int(hour), int(minute))


def is_trading_day(day: date, open_days: Collection[date] | None = None) -> bool:
    """Open by the stored calendar when it covers `day`, else any weekday."""
    if day.weekday() >= 5:
        return False
    if open_days and min(open_days) <= day <= max(open_days):
        return day in open_days
    return True


def latest_session(now: datetime | None = None, open_days: Collection[date] | None = None) -> date:
    """The latest trading day whose session has started by `now` (else the market's clock):
    today from the open auction (9:15) on, else the trading day before, so at 06:00 or on
    a Saturday it is the last day that traded."""
    now = market_now(now)
    day = now.date()
    if is_trading_day(day, open_days) and now.time() >= OPEN_AUCTION:
        return day
    day -= timedelta(days=1)
    while not is_trading_day(day, open_days):
        day -= timedelta(days=1)
    return day


def trading_phase(now: datetime, open_days: Collection[date] | None = None) -> Phase:
    """The phase of the trading day at `now` (Beijing time)."""
    now = market_now(now)
    if not is_trading_day(now.date(), open_days):
        return CLOSED
    current = now.time()
    key, label, in_session = next(
        (k, lbl, s) for start, k, lbl, s in reversed(_SCHEDULE) if current >= start
    )
    return Phase(key, label, True, in_session)


def partial_bar_note(now: datetime, phase: Phase) -> str:
    """The caveat for today's daily bar while the session runs (empty when it is final)."""
    if not phase.in_session:
        return ""
    return (
        f"盘中（{phase.label}，{now:%H:%M}）：{now:%Y-%m-%d} 的日线尚未收盘，"
        "最新价、涨跌幅和成交量都是截至此刻的，不是收盘数据。"
    )


def prompt_note(now: datetime, open_days: Collection[date] | None = None) -> str:
    """One paragraph for the system prompt: the day, the phase and what it means for data.
    It names no minute, so the prompt (a cached prefix) changes only with the phase."""
    phase = trading_phase(now, open_days)
    if not phase.trading_day:
        return f"今天 {now:%Y-%m-%d} 不是交易日，市场时段：休市。"
    note = (
        f"今天 {now:%Y-%m-%d} 是交易日，市场时段：{phase.label}（{phase_span(phase)}，北京时间）。"
    )
    if phase.in_session:
        note += "盘中：今天的日线尚未收盘，最新价、涨跌幅和成交量都只是截至此刻的，不是收盘数据。"
    return note


def phase_span(phase: Phase) -> str:
    """The hours of a trading day's phase, as 14:30–14:57."""
    starts = [start for start, *_ in _SCHEDULE] + [time(23, 59)]
    i = next(k for k, (_, key, *_rest) in enumerate(_SCHEDULE) if key == phase.key)
    return f"{starts[i]:%H:%M}–{starts[i + 1]:%H:%M}"
