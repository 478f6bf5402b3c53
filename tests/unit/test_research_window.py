"""`research signals --start/--end` outside the stored days: one sentence that fits."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from wyckoff.agents.research import signal_window
from wyckoff.cli.tools import ToolFailure
from wyckoff.engine.window import WARMUP_DAYS


def panel(days: int) -> SimpleNamespace:
    start = np.datetime64("2024-01-01")
    return SimpleNamespace(dates=np.array([start + i for i in range(days)], dtype="datetime64[D]"))


def test_a_start_after_the_last_day_says_so_without_a_none():
    """Found by hand: `--start 2999-01-01` said "2999-01-01 到 None 之间没有交易日：请让开始日期
    早于结束日期" though no end was given."""
    p = panel(WARMUP_DAYS + 10)
    with pytest.raises(ToolFailure) as refused:
        signal_window(p, "2999-01-01", None)
    said = refused.value.message
    assert "None" not in said and "晚于行情的最后一天" in said and str(p.dates[-1]) in said
    with pytest.raises(ToolFailure) as backwards:  # an end before the start keeps its sentence
        signal_window(p, str(p.dates[-2]), str(p.dates[-5]))
    assert "请让开始日期早于结束日期" in backwards.value.message
    assert signal_window(p, None, None) == (WARMUP_DAYS, WARMUP_DAYS + 9)
