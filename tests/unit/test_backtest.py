"""Backtest rules: no look-ahead, T+1 entry, locked bars, lots, fees, both accounting views."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import cli
from tests.engine_fixtures import DAYS, bars_panel, make_panel, sos_then, store_from_panel
from wyckoff.engine.backtest import (
    Trade,
    _exits,
    _trade_row,
    pick_order,
    run_backtest,
    simple_view,
)
from wyckoff.engine.cash_view import cash_portfolio
from wyckoff.engine.demo import build_demo_market
from wyckoff.engine.panel import Panel, panel_from_long
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig, limit_pct


@pytest.fixture(scope="module")
def demo_panel() -> Panel:
    market = build_demo_market(limit=200, days=330)
    return panel_from_long(
        market["bars"], market["stocks"].set_index("code"), market["index_bars"], "demo"
    )


@pytest.fixture(scope="module")
def full_backtest(demo_panel) -> dict:
    """The backtest over the whole panel, computed once (the cut runs compare against it)."""
    return run_backtest(demo_panel, 255, 329, regime_gate=False)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=262, max_value=325))
def test_no_look_ahead_signals_and_entries_ignore_later_data(demo_panel, full_backtest, cut):
    start = 255
    full = full_backtest
    truncated = run_backtest(demo_panel.upto(cut), start, cut, regime_gate=False)
    cut_date = str(demo_panel.dates[cut])
    assert [s for s in full["signals"] if s["date"] < cut_date] == truncated["signals"]

    def entered(result: dict) -> list[tuple]:
        return [
            (t["code"], t["entry_date"], t["entry"])
            for t in result["trade_list"]
            if t["entry_date"] < cut_date  # the cut run ends on cut_date: no buy that day
        ]

    assert entered(full) == entered(truncated)


def test_entries_happen_at_the_next_days_open(demo_panel, full_backtest):
    result = full_backtest
    assert result["trades"] > 0
    signal_days = {s["date"]: s["codes"] for s in result["signals"]}
    dates = [str(d) for d in demo_panel.dates]
    for trade in result["trade_list"]:
        entry_t = dates.index(trade["entry_date"])
        assert trade["code"] in signal_days[dates[entry_t - 1]]
        assert trade["entry"] == round(
            float(demo_panel.open[entry_t, demo_panel.column(trade["code"])]), 2
        )


def test_a_bar_locked_limit_up_cannot_be_bought():
    tradable = run_backtest(sos_then("open", 1), DAYS - 1, DAYS + 1, regime_gate=False)
    assert [t["code"] for t in tradable["trade_list"]] == ["600000"]
    locked = run_backtest(sos_then("locked", 1), DAYS - 1, DAYS + 1, regime_gate=False)
    assert "600000" in locked["signals"][0]["codes"] and locked["trade_list"] == []


def test_no_buy_on_the_last_day_a_zero_day_trade():
    result = run_backtest(sos_then("open"), DAYS - 1, DAYS, regime_gate=False)
    assert "600000" in result["signals"][0]["codes"]
    assert result["trades"] == 0 and result["trade_list"] == []


def test_the_simple_view_stops_at_minus_100pct():
    panel = bars_panel([[10], [10], [4], [1.6], [1.6]])
    simple = simple_view(panel, [Trade("600000", 1, 10.0, 4, 1.6)], 0, 4, DEFAULT_CONFIG)
    # summed: -0.5% on the buy, -60%, -60%: -120.5%, but no more than the stake can be lost
    assert simple["total_return_pct"] == -100 and simple["max_drawdown_pct"] == 100
    assert "2025-03-06 达到 100%（本金亏完）" in simple["note"]


def test_a_bar_locked_limit_down_cannot_be_sold():
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
    # buy 5,000 甲 (fee 10) and 2,400 乙 (fee 9.60); sell with commission and 0.05% stamp duty;
    # the 2025 transfer fee of 0.001% on each fill: 0.50 + 0.48 + 0.55 + 0.46
    assert cash["final_equity"] == pytest.approx(102_507.99, abs=0.01)
    assert cash["total_return_pct"] == pytest.approx(2.51, abs=0.01)


def test_lots_of_100_and_the_commission_minimum():
    panel = _two_trade_panel()
    cfg = EngineConfig(start_cash=10_000)
    cash = cash_portfolio(panel, [Trade("600001", 1, 10.0, 3, 11.0)], 0, 5, 3, cfg)
    # budget 3,333.33 -> 300 shares (not 333); fee 0.60 -> minimum 5; sell 3,300: fee 5 + duty 1.65;
    # transfer fee 0.001%: 0.03 on each side
    assert cash["final_equity"] == pytest.approx(
        10_000 - 3000 - 5 - 0.03 + 3300 - 5 - 1.65 - 0.03, abs=0.001
    )


def test_an_open_at_the_up_limit_is_not_bought():
    result = run_backtest(sos_then("limit_open", 1), DAYS - 1, DAYS + 1, regime_gate=False)
    assert "600000" in result["signals"][0]["codes"] and result["trade_list"] == []


def test_a_holding_suspended_at_the_end_is_marked_at_its_last_close_and_flagged():
    panel = sos_then("open", suspended_days=3)
    result = run_backtest(panel, DAYS - 1, DAYS + 3, top_n=1, regime_gate=False)
    json.dumps(result, allow_nan=False)  # valid JSON: no NaN anywhere
    (trade,) = result["trade_list"]
    entry, last = panel.open[DAYS, 0], panel.close[DAYS, 0]
    assert trade["name"] == "目标股份" and trade["open_at_end"] is True
    assert trade["exit"] == round(last, 2) and trade["reason"] == "期末停牌"
    assert trade["exit_date"] == str(panel.dates[DAYS + 3])
    net = last * 0.995 / (entry * 1.005) - 1
    assert result["avg_ret_pct"] == pytest.approx(net * 100, abs=0.001)
    # simple view: the entry day, two flat suspended days, then the sell friction
    simple = (last / (entry * 1.005) - 1) + (0.995 - 1)
    assert result["simple_view"]["total_return_pct"] == pytest.approx(simple * 100, abs=0.01)
    assert "0.5%" in result["simple_view"]["label"] and "摩擦" in result["simple_view"]["label"]
    cash = result["cash_portfolio"]
    assert "印花税" in cash["label"] and "不另计摩擦" in cash["label"]
    assert cash["total_return_pct"] == pytest.approx((last / entry - 1) * 100, abs=0.1)


def test_the_cash_view_marks_a_suspended_holding_at_its_last_close():
    nan = np.nan
    panel = bars_panel([[10], [10], [12], [nan], [nan], [12.5]])
    cash = cash_portfolio(panel, [Trade("600000", 1, 10.0, 5, 12.5)], 0, 5, 1, DEFAULT_CONFIG)
    # 9,900 shares (9,998 fit with the fee, in lots of 100); the only dip is the buy's fee
    assert cash["max_drawdown_pct"] == 0.02
    # commission 19.80 and 24.75, stamp duty 61.88, transfer fee 0.99 and 1.24
    assert cash["final_equity"] == pytest.approx(
        100_000 + 9_900 * 2.5 - 19.80 - 24.75 - 61.88 - 0.99 - 1.24
    )


def test_the_cash_view_charges_each_sell_the_stamp_duty_and_transfer_fee_of_its_date():
    days = ["2015-06-01", "2015-06-02", "2015-06-03", "2024-06-03", "2024-06-04", "2024-06-05"]
    panel = bars_panel([[10, 10]] * 6, codes=("600000", "600001"), dates=days)
    trades = [Trade("600000", 1, 10.0, 2, 10.0), Trade("600001", 3, 10.0, 4, 10.0)]
    cash = cash_portfolio(panel, trades, 0, 5, 1, DEFAULT_CONFIG)
    # 2015: 9,900 shares (10,000 do not fit with the fees); commission 19.80 each way, transfer
    # fee 0.002% = 1.98 each way, stamp duty on the sell 0.1% = 99.00
    after_2015 = 100_000 - 99_000 - 19.80 - 1.98 + 99_000 - 19.80 - 99.00 - 1.98
    # 2024: 9,900 shares again; transfer fee 0.001% = 0.99 each way, stamp duty 0.05% = 49.50
    after_2024 = after_2015 - 99_000 - 19.80 - 0.99 + 99_000 - 19.80 - 49.50 - 0.99
    assert cash["final_equity"] == pytest.approx(after_2024, abs=0.001)
    assert "成交当日的费率" in cash["label"]


def test_a_delisted_holding_leaves_at_its_last_price():
    nan = np.nan
    closes = [[10], [10], [10.5], [11], [nan], [nan]]
    gone = bars_panel(closes, list_status="D")
    trade = Trade("600000", 1, 10.0)
    assert _exits(gone, 4, [trade], 10, 8, 20) == []
    assert (trade.exit, trade.exit_t, trade.reason) == (11.0, 4, "退市")
    suspended = bars_panel(closes)
    still = Trade("600000", 1, 10.0)
    assert _exits(suspended, 4, [still], 10, 8, 20) == [still]  # suspended: waits


def test_a_suspension_of_a_stock_delisted_years_later_is_not_a_delisting_in_cut_data():
    """Walk-forward trains on data cut at the end of its window: what happens before the cut
    must not depend on whether the data go on."""
    gap = np.full(5, np.nan)
    close = np.concatenate([np.full(6, 10.0), gap, [10.4, 10.6]])
    panel = bars_panel(close[:, None].tolist(), list_status="D")  # delisted after day 12
    cut = 8  # in the middle of the suspension
    outcomes = []
    for data in (panel, panel.upto(cut)):
        trade = Trade("600000", 1, 10.0)
        held = [trade]
        for t in range(2, cut + 1):
            held = _exits(data, t, held, 30, 20, 50)
        outcomes.append((len(held), trade.exit, trade.reason))
    assert outcomes[0] == outcomes[1] == (1, None, "")  # still held, waiting for the resumption
    gone = Trade("600000", 1, 10.0)
    assert _exits(panel, 12, [gone], 30, 20, 50) == [gone]  # its final trading day
    held = _exits(
        bars_panel(close[:, None].tolist() + [[np.nan]], list_status="D"), 13, [gone], 30, 20, 50
    )
    assert held == [] and (gone.exit, gone.reason) == (10.6, "退市")


def test_every_window_loaded_from_the_store_knows_a_delisted_stocks_final_day(home):
    home.mkdir(parents=True)
    close = np.concatenate([np.full(30, 10.0), np.full(10, np.nan)])  # gone after day 29
    panel = make_panel(close, fillers=2)
    panel.stocks["list_status"] = ["D", "L", "L"]
    store = store_from_panel(home, panel)
    early = store.load_panel(10, end=str(panel.dates[20]))  # a window ending before it
    assert early.stocks.loc["600000", "last_trade_date"] == str(panel.dates[29])
    assert early.stocks["last_trade_date"].iloc[1:].isna().all()  # listed ones: none


def test_a_one_price_limit_down_bar_after_a_suspension_cannot_be_sold():
    nan = np.nan
    close = [[10], [10], [nan], [nan], [9.0], [8.5]]
    panel = bars_panel(close, open_=[[10], [10], [nan], [nan], [9.0], [8.6]])
    trade = Trade("600000", 1, 10.0)
    assert _exits(panel, 4, [trade], 10, 5, 20) == [trade]  # -10% from the close before
    assert _exits(panel, 5, [trade], 10, 5, 20) == [] and trade.exit == 8.6


def test_the_trailing_stop_takes_over_once_a_trade_is_15pct_up():
    panel = bars_panel(
        [[10], [10], [11.6], [11.0]],
        open_=[[10], [10], [11.5], [11.1]],
        high=[[10], [10], [12.0], [11.2]],
        low=[[10], [10], [11.4], [10.7]],
    )
    trade = Trade("600000", 1, 10.0)
    assert _exits(panel, 2, [trade], 10, 8, 30) == [trade]  # not armed before the close at 11.6
    assert _exits(panel, 3, [trade], 10, 8, 30) == []
    # trail = max(highest high 12.0 x 0.90, MA50 10.53 x 0.98) = 10.80; the low 10.70 breaks it
    assert trade.exit == pytest.approx(10.8) and trade.reason == "跟踪止损"
    assert _trade_row(panel, trade, DEFAULT_CONFIG)["reason"] == "跟踪止损"


def test_price_limits_follow_the_board_the_st_status_and_the_date():
    assert limit_pct("chinext", True, "2025-06-02") == limit_pct("star", True, "2025-06-02") == 0.20
    assert limit_pct("main", True, "2026-07-03") == 0.05
    assert limit_pct("main", True, "2026-07-06") == 0.10  # SSE/SZSE 2026 trading rules
    assert limit_pct("chinext", False, "2020-08-21") == 0.10  # before the registration reform
    assert limit_pct("chinext", True, "2020-08-21") == 0.05
    assert limit_pct("bse", False, "2025-06-02") == 0.30


@pytest.mark.parametrize(
    ("code", "board", "start", "sellable"),
    [
        ("300001", "chinext", "2025-06-02", True),  # ChiNext ST moves 20%: -5% is not the limit
        ("600001", "main", "2026-06-01", False),  # main-board ST before the change: 5% limit
        ("600001", "main", "2026-07-06", True),  # and after it: 10%
    ],
)
def test_a_minus_5pct_one_price_bar_of_an_st_stock_locks_only_where_5pct_is_the_limit(
    code, board, start, sellable
):
    panel = bars_panel([[10], [10], [9.5]], codes=(code,), board=board, is_st=True, start=start)
    trade = Trade(code, 1, 10.0)
    assert (_exits(panel, 2, [trade], 10, 4, 20) == []) is sellable


def test_the_limit_follows_the_st_status_of_that_day_not_todays():
    """A stock that was ST back then (5% limit) but is no longer ST today."""
    panel = bars_panel([[10], [10], [9.5]], codes=("600001",), start="2026-06-01")
    trade = Trade("600001", 1, 10.0)
    assert _exits(panel, 2, [trade], 10, 4, 20) == []  # not ST: -5% is sellable, it exits
    panel.is_st = np.array([[True], [True], [True]])
    assert _exits(panel, 2, [trade], 10, 4, 20) != []  # ST that day: -5% is limit-down, held


def test_star_buys_need_200_shares_then_go_by_single_shares():
    panel = bars_panel([[50], [50], [50], [55]], codes=("688001",), board="star")
    trades = [Trade("688001", 1, 50.0, 3, 55.0)]
    cash = cash_portfolio(panel, trades, 0, 3, 1, EngineConfig(start_cash=15_000))
    # 299 shares (not 200): fee 5 each way, stamp duty 8.22 on 16,445, transfer fee 0.15 + 0.16
    assert cash["final_equity"] == pytest.approx(15_000 + 299 * 5 - 10 - 8.22 - 0.31)
    poor = cash_portfolio(panel, trades, 0, 3, 1, EngineConfig(start_cash=9_000))
    assert poor["skipped_for_cash"] == 1 and poor["final_equity"] == 9_000  # 179 < 200


def test_picks_are_ranked_by_the_composite_score_not_the_trigger_score():
    from wyckoff.engine.funnel import FunnelResult

    everyone = np.ones(3, dtype=bool)
    result = FunnelResult(
        "2025-06-02",
        3,
        everyone,
        everyone,
        everyone,
        channels={},
        triggers={"spring": np.array([True, True, False])},
        trigger_scores={"spring": np.array([9.0, 2.0, np.nan])},  # recovery %: A looks better
        strength=np.full(3, 0.5),
        score=np.array([50.0, 80.0, 90.0]),  # but B ranks higher overall; C did not trigger
    )
    assert pick_order(result, everyone, 2) == [1, 0]
    assert pick_order(result, np.array([True, False, True]), 2) == [0]


def _reject_nan(constant: str) -> None:
    raise AssertionError(f"bare {constant} is not valid JSON")


def test_backtest_command_names_the_stocks_labels_costs_and_says_when_the_list_is_cut(
    home, install_demo
):
    start = str(install_demo(home, 400).load_panel(60).dates[-40])
    assert cli("data", "use", "demo").returncode == 0
    result = cli("backtest", "--start", start, "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout, parse_constant=_reject_nan)
    trades = payload["trades"]
    assert trades > 0 and all(t["name"] for t in payload["trade_list"])
    text = cli("backtest", "--start", start).stdout
    cut = "，只列出最近 10 笔" if trades > 10 else ""
    assert f"交易明细：共 {trades} 笔{cut}" in text
    assert payload["trade_list"][-1]["name"] in text
    assert "买卖各计 0.5% 摩擦成本" in text and "卖出印花税" in text
    busy = cli("backtest", "--start", start, "--top-n", "5", "--hold-days", "2", "--json")
    payload = json.loads(busy.stdout, parse_constant=_reject_nan)
    trades = payload["trades"]
    assert len(payload["trade_list"]) == min(trades, 30)
    note = f"共 {trades} 笔交易，这里只列出最近 30 笔"
    assert (payload.get("trade_list_note") == note) == (trades > 30)


# --- corporate actions in the cash view ---------------------------------------------------------


def _flat_through_an_ex_date(home, raw_before: float, raw_after: float) -> Panel:
    """A stock traded flat at `raw_before`, then at `raw_after` from its ex-date (day 5) on,
    loaded from a market store as a sync writes it (raw prices and adjustment factors)."""
    home.mkdir(parents=True, exist_ok=True)
    qfq = make_panel(np.full(10, raw_after), fillers=2)
    factor = np.ones(qfq.close.shape)
    factor[5:, 0] = raw_before / raw_after  # the exchange's prior close / reference price
    return store_from_panel(home, qfq, adj_factor=factor).load_panel(10)


def test_a_10_for_10_bonus_issue_does_not_halve_the_cash_account(home):
    panel = _flat_through_an_ex_date(home, 10.0, 5.0)  # 10送10: 10.00 -> 5.00, flat otherwise
    assert panel.raw_close[2, 0] == pytest.approx(10.0) and panel.close[2, 0] == pytest.approx(5.0)
    cash = cash_portfolio(panel, [Trade("600000", 2, 5.0, 7, 5.0)], 0, 9, 1, DEFAULT_CONFIG)
    # 9,900 shares at 10.00 (99,000 + 19.80 fee), 19,800 shares at 5.00 after the ex-date:
    # sold for 99,000 less 19.80 commission and 49.50 stamp duty; 0.99 transfer fee each way
    assert cash["final_equity"] == pytest.approx(100_000 - 19.80 - 19.80 - 49.50 - 1.98)
    assert cash["total_return_pct"] == -0.09 and cash["max_drawdown_pct"] < 0.1


def test_a_cash_dividend_stays_in_the_cash_account(home):
    panel = _flat_through_an_ex_date(home, 10.0, 9.5)  # 10派5: reference price 9.50, then flat
    cash = cash_portfolio(panel, [Trade("600000", 2, 9.5, 7, 9.5)], 0, 9, 1, DEFAULT_CONFIG)
    # 9,900 shares at 10.00; from the ex-date 94,050 in shares plus 4,950 of dividend, kept in
    # the holding (reinvested at 9.50), so the sale is 99,000 less commission and stamp duty
    assert cash["final_equity"] == pytest.approx(100_000 - 19.80 - 19.80 - 49.50 - 1.98)
    assert cash["max_drawdown_pct"] < 0.1
