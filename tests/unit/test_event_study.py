"""The event study (engine/event_study.py) on hand-worked fixtures, and the per-day trigger
cap (engine/triggers.py) on a quiet market where every stock compresses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.engine_fixtures import bars_panel
from wyckoff.engine.event_study import Events, clustered_t, measure, round_trip_cost, summarize
from wyckoff.engine.funnel import run_funnel
from wyckoff.engine.health import diagnose
from wyckoff.engine.indicators import features_at
from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.engine.triggers import compression, detect_triggers

NAN = np.nan
CODES = ("600000", "600001", "600002")


def one_event(p: Panel, code: str = "600000", day: int = 0) -> Events:
    """A Spring (signal 0) on `code` on day `day`."""
    return Events(
        np.array([0], np.int8),
        p.dates[day : day + 1],
        np.array([code]),
        p.dates[day : day + 1],
        np.zeros(1, np.int8),
    )


def test_a_planted_events_return_and_excess_over_the_market_and_the_csi300():
    # Signal on day 0 for 600000; bought at day 1's open, h = 2: sold at day 2's close.
    #   600000: open 10.00 -> close 11.00: +10%
    #   600001: open 20.00 -> close 19.00: -5%     (the market: every stock with an open on day 1)
    #   600002: open  5.00 -> close  5.50: +10%
    #   equal-weight market = (10 - 5 + 10) / 3 = +5%   -> excess vs market = +5%
    #   CSI 300 close day 0 4000 -> day 2 4100: +2.5%   -> excess vs CSI 300 = +7.5%
    p = bars_panel(
        [[10, 20, 5], [10.5, 19.5, 5.2], [11, 19, 5.5], [11, 19, 5.5]],
        open_=[[10, 20, 5], [10, 20, 5], [10.6, 19.4, 5.3], [11, 19, 5.5]],
        codes=CODES,
    )
    p.index_close["000300.SH"] = np.array([4000.0, 4050.0, 4100.0, 4100.0])
    events = one_event(p)
    out = measure(p, events, (2,), DEFAULT_CONFIG)
    assert out.buyable[0] and out.entry_price[0] == 10.0
    assert out.returns[0][0] == pytest.approx(0.10)
    assert out.market[0][0] == pytest.approx(0.05)
    assert out.csi300[0][0] == pytest.approx(0.025)
    record = summarize(events, out, DEFAULT_CONFIG)[0]
    stats = record["2"]
    assert stats["mean_return"] == pytest.approx(0.10)
    assert stats["excess_vs_market"] == pytest.approx(0.05)
    assert stats["excess_vs_csi300"] == pytest.approx(0.075)
    assert stats["hit_rate"] == 1.0
    # 2025: commission 0.02% on each side + stamp duty 0.05% on the sale + transfer fee
    # 0.001% on each side = 0.092%
    assert stats["mean_return_after_cost"] == pytest.approx(0.10 - 0.00092)
    assert record["events"] == 1 and record["unbuyable"] == 0


def test_the_round_trip_cost_follows_the_event_date():
    # 2015-09: stamp duty 0.1% on the sale, transfer fee 0.002% each side, commission 0.02%
    # each side = 0.144%; 2025: 0.05% + 0.001% x 2 + 0.04% = 0.092%; their mean 0.118%
    days = np.array(["2015-09-01", "2025-03-03"], dtype="datetime64[D]")
    assert round_trip_cost(DEFAULT_CONFIG, days[:1]) == pytest.approx(0.00144)
    assert round_trip_cost(DEFAULT_CONFIG, days[1:]) == pytest.approx(0.00092)
    assert round_trip_cost(DEFAULT_CONFIG, days) == pytest.approx(0.00118)


def test_an_open_at_the_up_limit_is_counted_unbuyable_not_dropped():
    # 600000 closes at 10.00 on day 0 and opens at 11.00 (+10%, the main board's limit) on day 1
    p = bars_panel(
        [[10, 20, 5], [11, 20, 5], [11.5, 20, 5]],
        open_=[[10, 20, 5], [11, 20, 5], [11.2, 20, 5]],
        high=[[10, 20, 5], [11.5, 20, 5], [11.6, 20, 5]],
        low=[[10, 20, 5], [10.9, 20, 5], [11.1, 20, 5]],
        codes=CODES,
    )
    events = one_event(p)
    out = measure(p, events, (1,), DEFAULT_CONFIG)
    record = summarize(events, out, DEFAULT_CONFIG)[0]
    assert record["events"] == 1 and record["unbuyable"] == 1
    assert record["1"]["complete"] == 0 and record["1"]["mean_return"] is None


def test_a_suspended_next_day_is_counted_unbuyable():
    p = bars_panel([[10, 20, 5], [NAN, 20, 5], [10.5, 20, 5]], codes=CODES)
    events = one_event(p)
    record = summarize(events, measure(p, events, (1,), DEFAULT_CONFIG), DEFAULT_CONFIG)[0]
    assert record["unbuyable"] == 1 and record["1"]["complete"] == 0


def test_a_stock_delisted_before_the_horizon_exits_at_its_last_close():
    # 600000 is bought at 10.00 on day 1, trades a last time on day 2 (close 8.00) and is
    # delisted: at h = 3 (day 3) its outcome is 8.00 / 10.00 - 1 = -20%, dated day 2.
    p = bars_panel(
        [[10, 20, 5], [9, 20, 5], [8, 20, 5], [NAN, 20, 5], [NAN, 20, 5]],
        open_=[[10, 20, 5], [10, 20, 5], [8.5, 20, 5], [NAN, 20, 5], [NAN, 20, 5]],
        codes=CODES,
    )
    stocks = p.stocks
    stocks["list_status"] = ["D", "L", "L"]
    p.stocks = stocks
    out = measure(p, one_event(p), (3,), DEFAULT_CONFIG)
    assert out.returns[0][0] == pytest.approx(-0.20)
    assert p.dates[out.exit_t[0][0]] == p.dates[2]


def test_the_t_statistic_counts_a_day_with_two_events_once():
    # Day 1 has two events (+2%, +4%: its mean +3%), days 2 and 3 one each (+1%, -1%).
    # Per-date means 3%, 1%, -1%: mean 1%, sd 2% -> t = 0.01 / (0.02 / sqrt(3)) = 0.866.
    # Counted per event (2, 4, 1, -1) the t would be 1.5 / (2.08 / 2) = 1.44.
    dates = np.array(["2025-01-01", "2025-01-01", "2025-01-02", "2025-01-03"], "datetime64[D]")
    t, n_dates = clustered_t(np.array([0.02, 0.04, 0.01, -0.01]), dates)
    assert n_dates == 3
    assert t == pytest.approx(np.sqrt(3) / 2)


# --- the per-day cap (issue 36, section 6) ------------------------------------------------------


def quiet_market(stocks: int = 200, days: int = 160) -> Panel:
    """Every stock drifts up gently while its daily range and its volume shrink day after day
    (volume 2% a day: relative to its own past, every stock's volume dries up): every stock's
    ATR is at its lowest of the month, the textbook compression, all on the same day."""
    rng = np.random.default_rng(3)
    d = np.arange(days)[:, None]
    close = 10 * 1.001**d * rng.uniform(0.9, 1.1, stocks)
    amplitude = 0.03 * 0.985**d * rng.uniform(0.8, 1.2, stocks)
    volume = 1e7 * np.exp(-0.02 * d * rng.uniform(0.8, 1.2, stocks))
    codes = [f"{600000 + j:06d}" for j in range(stocks)]
    frame = pd.DataFrame(
        {
            "name": [f"股票{j}" for j in range(stocks)],
            "industry": "银行",
            "board": "main",
            "is_st": False,
            "market_cap": 2e10,
            "list_date": "20100104",
        },
        index=codes,
    )
    dates = np.arange(np.datetime64("2025-01-01"), np.datetime64("2025-01-01") + days)
    return Panel(
        dates.astype("datetime64[D]"),
        codes,
        np.vstack([close[:1], close[:-1]]),
        close * (1 + amplitude),
        close * (1 - amplitude),
        close,
        volume,
        close * volume,
        frame,
        {},
        "test",
    )


def test_in_a_quiet_market_where_every_stock_compresses_at_most_5pct_fire():
    p = quiet_market()
    t = len(p.dates) - 1
    f = features_at(p, t, DEFAULT_CONFIG)
    raw, score = compression(p, t, f, DEFAULT_CONFIG)
    assert raw.mean() > 0.9  # the stock's-own-past test: nearly the whole market compresses
    fired, _ = detect_triggers(p, t, f, DEFAULT_CONFIG)
    assert fired["compression"].sum() == 10  # 5% of 200 traded stocks
    kept = score[fired["compression"]]
    dropped = score[raw & ~fired["compression"]]
    assert kept.max() <= dropped.min()  # the quietest volumes are kept
    result = run_funnel(p, t, DEFAULT_CONFIG)
    for name, mask in result.all_triggers.items():
        assert mask.sum() <= 10, name


def test_a_one_stock_diagnosis_follows_the_markets_cap():
    """analyze reads the same cut as the funnel: a stock the cap drops shows no compression."""
    p = quiet_market()
    t = len(p.dates) - 1
    fired, _ = detect_triggers(p, t, features_at(p, t, DEFAULT_CONFIG), DEFAULT_CONFIG)
    f = features_at(p, t, DEFAULT_CONFIG)
    raw, _ = compression(p, t, f, DEFAULT_CONFIG)
    dropped = p.codes[int(np.flatnonzero(raw & ~fired["compression"])[0])]
    kept = p.codes[int(np.flatnonzero(fired["compression"])[0])]
    assert "波动收敛" not in diagnose(p, dropped)["triggers"]
    funnel = run_funnel(p, t, DEFAULT_CONFIG).all_triggers["compression"]
    assert ("波动收敛" in diagnose(p, kept)["triggers"]) == bool(funnel[p.column(kept)])
