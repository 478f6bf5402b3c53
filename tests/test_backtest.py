"""Backtest rules: no look-ahead, T+1 entry, locked bars, lots, fees, both accounting views."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine_fixtures import DAYS, make_panel
from wyckoff.engine.backtest import Trade, cash_portfolio, run_backtest, simple_view
from wyckoff.engine.config import DEFAULT_CONFIG, EngineConfig
from wyckoff.engine.demo import build_demo_market
from wyckoff.engine.panel import Panel, panel_from_long


@pytest.fixture(scope="module")
def demo_panel() -> Panel:
    market = build_demo_market(limit=200, days=330)
    return panel_from_long(
        market["bars"], market["stocks"].set_index("code"), market["index_bars"], "demo"
    )


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=262, max_value=325))
def test_no_look_ahead_signals_and_entries_ignore_later_data(demo_panel, cut):
    start = 255
    full = run_backtest(demo_panel, start, 329, regime_gate=False)
    truncated = run_backtest(demo_panel.upto(cut), start, cut, regime_gate=False)
    cut_date = str(demo_panel.dates[cut])
    assert [s for s in full["signals"] if s["date"] < cut_date] == truncated["signals"]

    def entered(result: dict) -> list[tuple]:
        return [
            (t["code"], t["entry_date"], t["entry"])
            for t in result["trade_list"]
            if t["entry_date"] <= cut_date
        ]

    assert entered(full) == entered(truncated)


def test_entries_happen_at_the_next_days_open(demo_panel):
    result = run_backtest(demo_panel, 255, 329, regime_gate=False)
    assert result["trades"] > 0
    signal_days = {s["date"]: s["codes"] for s in result["signals"]}
    dates = [str(d) for d in demo_panel.dates]
    for trade in result["trade_list"]:
        entry_t = dates.index(trade["entry_date"])
        assert trade["code"] in signal_days[dates[entry_t - 1]]
        assert trade["entry"] == round(
            float(demo_panel.open[entry_t, demo_panel.column(trade["code"])]), 2
        )


def _sos_then(next_bar: str) -> Panel:
    """The target fires SOS on its last-but-one day; the last day is either tradable or locked."""
    close = np.full(DAYS + 1, 10.0) * (1 + 0.002 * np.sin(np.arange(DAYS + 1)))
    close[-2] = close[-3] * 1.07
    volume = np.full(DAYS + 1, 1e7)
    volume[-2] = 4e7
    close[-1] = close[-2] * (1.0999 if next_bar == "locked" else 1.02)
    open_ = np.concatenate([[close[0]], close[:-1]])
    open_[-1] = close[-1] if next_bar == "locked" else close[-2] * 1.01
    high, low = np.maximum(open_, close) * 1.01, np.minimum(open_, close) * 0.99
    if next_bar == "locked":
        high[-1] = low[-1] = close[-1]
    return make_panel(close, volume, high=high, low=low, open_=open_)


def test_a_bar_locked_limit_up_cannot_be_bought():
    tradable = run_backtest(_sos_then("open"), DAYS - 1, DAYS, regime_gate=False)
    assert [t["code"] for t in tradable["trade_list"]] == ["600000"]
    locked = run_backtest(_sos_then("locked"), DAYS - 1, DAYS, regime_gate=False)
    assert "600000" in locked["signals"][0]["codes"] and locked["trade_list"] == []


def test_a_bar_locked_limit_down_cannot_be_sold():
    from wyckoff.engine.backtest import _exits

    close = np.array([10.0, 10.0, 9.0, 8.5])
    panel = make_panel(
        close,
        fillers=2,
        high=close.copy(),
        low=close.copy(),
        open_=np.array([10.0, 10.0, 9.0, 8.6]),
    )
    trade = Trade("600000", 1, 10.0)
    assert _exits(panel, 2, [trade], 10, 5, 20) == [trade]  # day 2 is one price at -10%: stuck
    assert (
        _exits(panel, 3, [trade], 10, 5, 20) == [] and trade.reason == "止损" and trade.exit == 8.6
    )


def _two_trade_panel() -> Panel:
    codes = ["600001", "600002"]
    closes = np.array([[10, 20], [10, 20], [10.5, 20], [11, 19.5], [11, 19], [11, 19]], dtype=float)
    opens = closes.copy()
    dates = np.arange(np.datetime64("2025-03-03"), np.datetime64("2025-03-09")).astype(
        "datetime64[D]"
    )
    stocks = pd.DataFrame(
        {
            "name": ["甲", "乙"],
            "industry": "银行",
            "board": "main",
            "is_st": False,
            "market_cap": 1e10,
        },
        index=codes,
    )
    return Panel(
        dates,
        codes,
        opens,
        closes,
        closes,
        closes,
        np.full((6, 2), 1e6),
        closes * 1e6,
        stocks,
        {},
        "test",
    )


def test_simple_and_compounding_views_on_a_two_trade_example_worked_by_hand():
    panel = _two_trade_panel()
    trades = [Trade("600001", 1, 10.0, 3, 11.0), Trade("600002", 2, 20.0, 4, 19.0)]
    simple = simple_view(panel, trades, 0, 5, DEFAULT_CONFIG)
    # day1 -0.4975%, day2 mean(5%, -0.4975%), day3 mean(4.2381%, -2.5%), day4 -3.0513%
    assert simple["total_return_pct"] == pytest.approx(-0.43, abs=0.01)
    cash = cash_portfolio(panel, trades, 0, 5, 2, DEFAULT_CONFIG)
    # buy 5,000 甲 (fee 10) and 2,400 乙 (fee 9.60); sell with commission and 0.05% stamp duty
    assert cash["final_equity"] == pytest.approx(102_509.98, abs=0.01)
    assert cash["total_return_pct"] == pytest.approx(2.51, abs=0.01)


def test_lots_of_100_and_the_commission_minimum():
    panel = _two_trade_panel()
    cfg = EngineConfig(start_cash=10_000)
    cash = cash_portfolio(panel, [Trade("600001", 1, 10.0, 3, 11.0)], 0, 5, 3, cfg)
    # budget 3,333.33 -> 300 shares (not 333); fee 0.60 -> minimum 5; sell 3,300: fee 5 + duty 1.65
    assert cash["final_equity"] == pytest.approx(10_000 - 3000 - 5 + 3300 - 5 - 1.65, abs=0.001)
