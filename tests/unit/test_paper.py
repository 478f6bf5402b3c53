"""The paper account books the backtest's own decisions, day by day, with the ledger's rules."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine_fixtures import DAYS, sos_then
from wyckoff import paper_store
from wyckoff.agents.paper import reset_account, run_days
from wyckoff.engine.backtest import Rules, run_backtest
from wyckoff.engine.cash_view import engine_broker
from wyckoff.engine.demo import build_demo_market
from wyckoff.engine.panel import Panel, panel_from_long
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.store import Store

START, END = 255, 329
BROKER = engine_broker(DEFAULT_CONFIG)


@pytest.fixture(scope="module")
def demo_panel() -> Panel:
    market = build_demo_market(limit=200, days=330)
    return panel_from_long(
        market["bars"], market["stocks"].set_index("code"), market["index_bars"], "demo"
    )


def day(p: Panel, t: int) -> str:
    return str(p.dates[t]).replace("-", "")


def opened(tmp_path, p: Panel, start_t: int, capital: int = 100_000_00) -> Store:
    store = Store(tmp_path / "wyckoff.db")
    reset_account(store, "demo", capital, str(p.dates[start_t]))
    return store


def test_a_paper_run_books_exactly_the_backtests_trades_over_the_same_window(tmp_path, demo_panel):
    p = demo_panel
    result = run_backtest(p, START, END, regime_gate=False)
    store = opened(tmp_path, p, START)
    run_days(store, p.upto(END), BROKER, Rules(regime_gate=False))
    fills = paper_store.fills(store)
    buys = [(f["code"], f["trade_date"]) for f in fills if f["side"] == "buy"]
    sells = [(f["code"], f["trade_date"], f["reason"]) for f in fills if f["side"] == "sell"]
    trades = result["trade_list"]
    assert len(trades) >= 5  # a window with real work in it
    last = day(p, END)
    assert [b for b in buys if b[1] < last] == [
        (t["code"], t["entry_date"].replace("-", "")) for t in trades
    ]
    assert sorted(sells) == sorted(
        (t["code"], t["exit_date"].replace("-", ""), t["reason"])
        for t in trades
        if not t["open_at_end"]
    )
    held = {pos["code"] for pos in paper_store.positions(store)}
    assert {t["code"] for t in trades if t["open_at_end"]} <= held
    nav = paper_store.nav(store)
    assert [n["day"] for n in nav] == [day(p, t) for t in range(START, END + 1)]


def test_running_again_on_the_same_days_books_nothing_new(tmp_path, demo_panel):
    p = demo_panel.upto(START + 30)
    store = opened(tmp_path, p, START)
    first = run_days(store, p, BROKER, Rules(regime_gate=False))
    before = (paper_store.fills(store), paper_store.nav(store), paper_store.account(store))
    assert len(first) == 31 and run_days(store, p, BROKER, Rules(regime_gate=False)) == []
    assert (paper_store.fills(store), paper_store.nav(store), paper_store.account(store)) == before
    # the next day, when it arrives, is booked on its own
    later = run_days(store, demo_panel.upto(START + 31), BROKER, Rules(regime_gate=False))
    assert [d["date"] for d in later] == [day(demo_panel, START + 31)]


def orders(store: Store) -> list[dict]:
    return [dict(r) for r in store.conn.execute("SELECT * FROM paper_orders ORDER BY id")]


def test_an_open_at_the_up_limit_stays_unfilled_with_the_reason(tmp_path):
    p = sos_then("limit_open", 1)
    store = opened(tmp_path, p, DAYS - 1)
    run_days(store, p, BROKER, Rules(regime_gate=False))
    (order,) = [o for o in orders(store) if o["code"] == "600000"]
    assert order["decided_date"] == day(p, DAYS - 1) and order["fill_date"] == day(p, DAYS)
    assert order["status"] == "unfilled" and order["reason"] == "开盘即涨停，排队买不进"
    assert paper_store.fills(store) == [] and paper_store.positions(store) == []


def test_a_suspended_stock_is_not_bought_and_says_why(tmp_path):
    p = sos_then("open", 2)
    p.open[DAYS, 0] = p.high[DAYS, 0] = p.low[DAYS, 0] = p.close[DAYS, 0] = np.nan
    store = opened(tmp_path, p, DAYS - 1)
    run_days(store, p, BROKER, Rules(regime_gate=False))
    (order,) = [o for o in orders(store) if o["code"] == "600000"]
    assert order["status"] == "unfilled" and order["reason"] == "停牌，没有开盘价"


def test_t_plus_1_a_stop_hit_on_the_day_bought_sells_the_next_day(tmp_path):
    p = sos_then("open", 1)
    bought = p.open[DAYS, 0]
    p.low[DAYS, 0] = bought * 0.9  # below the 8% stop on the day it was bought
    p.open[DAYS + 1, 0] = p.high[DAYS + 1, 0] = p.close[DAYS + 1, 0] = bought * 0.95
    p.low[DAYS + 1, 0] = bought * 0.9
    store = opened(tmp_path, p, DAYS - 1)
    run_days(store, p, BROKER, Rules(regime_gate=False))
    sides = [(f["side"], f["trade_date"], f["reason"]) for f in paper_store.fills(store)]
    assert sides[0][:2] == ("buy", day(p, DAYS))
    assert sides[1] == ("sell", day(p, DAYS + 1), "止损")  # not on DAYS: T+1
    (sell,) = [f for f in paper_store.fills(store) if f["side"] == "sell"]
    # sold at the stop, 8% under the price paid (the open was above it), fees of its date
    assert sell["price_cents"] == round(bought * 0.92 * 100)
    assert sell["stamp_cents"] == round(sell["value_cents"] * 0.0005)


def test_a_second_run_at_once_waits_for_the_first_instead_of_failing(tmp_path, demo_panel):
    """Found by hand: two `paper run` at once, the waiting one starved on SQLite's write lock
    (the other retakes it every day) and ended in a "database is locked" traceback."""
    import fcntl
    import threading

    from wyckoff.agents.paper import LOCK_FILE

    p = demo_panel.upto(START + 5)
    store = opened(tmp_path, p, START)
    results: list[list[dict]] = []
    with open(tmp_path / LOCK_FILE, "a") as held:  # another run holds the account
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = threading.Thread(
            target=lambda: results.append(
                run_days(Store(tmp_path / "wyckoff.db"), p, BROKER, Rules(regime_gate=False))
            )
        )
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and paper_store.account(store)["last_date"] is None
    waiting.join(30)
    assert [d["date"] for d in results[0]] == [day(p, t) for t in range(START, START + 6)]
