"""The one forward-return measure (engine/forward_returns.py) on bars worked out by hand:
close(t+h) / open(t+1) - 1, entries that cannot be filled and why, a stock gone quiet."""

from __future__ import annotations

import math

import pytest

from tests.engine_fixtures import bars_panel
from wyckoff.engine import forward_returns as fr

NAN = math.nan


def test_the_return_runs_from_the_next_open_to_the_close_h_days_on_and_the_market_beside_it():
    p = bars_panel(
        [[10.0, 20.0], [10.5, 19.0], [11.0, 18.0], [12.0, 20.0]],
        open_=[[10.0, 20.0], [10.2, 20.0], [10.5, 19.0], [11.0, 18.0]],
        codes=("600000", "600004"),
    )
    assert fr.forward_return(p, 0, 0, 1) == pytest.approx(10.5 / 10.2 - 1)
    assert fr.forward_return(p, 0, 0, 3) == pytest.approx(12.0 / 10.2 - 1)
    assert fr.forward_return(p, 0, 0, 4) is None  # day 4 has not come
    assert fr.market_return(p, 0, 3) == pytest.approx(((12.0 / 10.2 - 1) + 0.0) / 2)
    assert fr.day_after(p, "2025-03-03") == 1 and fr.day_after(p, "2025-03-06") is None


def test_a_suspended_stock_counts_at_its_last_close_and_cannot_be_entered_while_suspended():
    p = bars_panel([[10.0], [10.0], [NAN], [NAN]], open_=[[10.0], [10.0], [NAN], [NAN]])
    assert fr.forward_return(p, 0, 0, 3) == pytest.approx(0.0)  # delisted: its final close
    entry = fr.entry_at_open(p, 2, 0, "buy")
    assert entry.price is None and entry.unfillable == "2025-03-05 停牌，无开盘价"


def test_limit_opens_block_a_buy_up_and_a_sell_down():
    p = bars_panel(
        [[10.0, 10.0], [11.0, 9.0]],
        open_=[[10.0, 10.0], [11.0, 9.0]],
        codes=("600000", "600004"),
    )
    assert fr.entry_at_open(p, 1, 0, "buy").unfillable == "2025-03-04 涨停开盘，买不进"
    assert fr.entry_at_open(p, 1, 0, "sell").unfillable is None
    assert fr.entry_at_open(p, 1, 1, "sell").unfillable == "2025-03-04 跌停开盘，卖不出"
    assert fr.entry_at_open(p, 1, 1, "buy").price == 9.0


def test_excursions_and_the_stop_over_the_days_after_entry():
    closes = [[10.0]] + [[10.0 + 0.1 * k] for k in range(1, 22)]
    lows = [[c[0] - 0.5] for c in closes]
    highs = [[c[0] + 0.5] for c in closes]
    p = bars_panel(closes, low=lows, high=highs)
    mfe, mae = fr.excursions(p, 0, 0)
    assert mfe == pytest.approx((12.0 + 0.5) / 10.1 - 1)  # day 20's high over day 1's open
    assert mae == pytest.approx((10.1 - 0.5) / 10.1 - 1)
    assert fr.stop_hit(p, 0, 0, 9.6) is True and fr.stop_hit(p, 0, 0, 9.5) is False
    assert fr.excursions(p.upto(19), 0, 0) is None  # day 20 has not come
