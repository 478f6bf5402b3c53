"""Trading-day arithmetic: stored open days where the calendar is known, weekdays beyond it."""

from __future__ import annotations

import numpy as np


def skipped_weekdays(previous: np.datetime64, current: np.datetime64) -> int:
    """Weekdays strictly between two bars: holidays and suspensions count, weekends do not."""
    return int(np.busday_count(previous + np.timedelta64(1, "D"), current))


def trading_day_after(start: np.datetime64, days: int, open_days: np.ndarray) -> np.datetime64:
    """The `days`-th trading day after `start`: the stored open days (sorted datetime64[D])
    while they last, then weekdays (future holidays are not known yet)."""
    start = np.datetime64(start, "D")
    later = open_days[open_days > start]
    if len(later) >= days:
        return later[days - 1]
    last_known = max(start, open_days[-1]) if len(open_days) else start
    return np.busday_offset(last_known, days - len(later), roll="backward")
