"""The one forward-return measure (engine/forward_returns.py) on bars worked out by hand:
close(t+h) / open(t+1) - 1, entries that cannot be filled and why, a stock gone quiet."""

from __future__ import annotations

import math

import numpy as np
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


def test_the_scorecards_measure_is_the_event_studys_on_the_same_events():
    """One definition: a buy on the scorecard scores what the event study measures."""
    from tests.engine_fixtures import make_panel, series
    from wyckoff.engine.event_study import Events, measure
    from wyckoff.engine.thresholds import DEFAULT_CONFIG

    p = make_panel(series((60, 0.004), (40, -0.003)), fillers=30)
    p.close[50:53, 3] = math.nan  # a suspension inside the horizons
    p.open[50:53, 3] = math.nan
    p.index_close["000300.SH"] = 3800 * (1 + 0.001 * np.arange(len(p.dates)))
    picks = [(t, j) for t in (10, 45, 49, 70, 95) for j in (0, 3, 7)]
    events = Events(
        signal=np.zeros(len(picks), dtype=np.int8),
        date=np.array([p.dates[t] for t, _ in picks]),
        code=np.array([p.codes[j] for _, j in picks]),
        days=p.dates,
        regimes=np.zeros(len(p.dates), dtype=np.int8),
    )
    horizons = fr.HORIZONS
    study = measure(p, events, horizons, DEFAULT_CONFIG)
    assert (~np.isnan(study.returns)).sum() >= 25  # most events have outcomes to compare
    for k, (t, j) in enumerate(picks):
        for row, h in enumerate(horizons):
            known = not math.isnan(study.returns[row, k])
            mine = fr.forward_return(p, t, j, h)
            assert known == (mine is not None and study.buyable[k]), (t, j, h)
            if known:
                assert mine == pytest.approx(study.returns[row, k])
                assert fr.market_return(p, t, h) == pytest.approx(study.market[row, k])
                assert fr.index_return(p, t, h) == pytest.approx(study.csi300[row, k])
