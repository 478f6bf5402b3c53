"""A backtest window without a single trade reads like any other: unknown numbers are "—"."""

from __future__ import annotations

from tests.cli_runner import cli
from wyckoff.engine.market_store import MarketStore


def test_a_backtest_without_trades_shows_no_python_none(demo_home):
    """Found by hand: `backtest --start <the day before the last>` printed "夏普 None"."""
    dates = MarketStore.for_source(demo_home, "demo").bar_dates()["date"]
    ran = cli("backtest", "--start", dates.iloc[-2].strftime("%Y-%m-%d"))
    assert ran.returncode == 0 and "交易 0 笔" in ran.stdout
    assert "None" not in ran.stdout and "夏普 —" in ran.stdout
