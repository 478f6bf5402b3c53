"""The Wyckoff engine on hand-built series: each trigger and channel fires where it must and
stays quiet where it must not; health, regime and backtest rules."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.engine_fixtures import DAYS, make_panel, series
from wyckoff.engine.funnel import layer2, run_funnel
from wyckoff.engine.health import diagnose, holding_health
from wyckoff.engine.indicators import features_at
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.engine.triggers import TRIGGERS

T = DAYS - 1


def fires(trigger: str, panel) -> bool:
    f = features_at(panel, T, DEFAULT_CONFIG)
    return bool(TRIGGERS[trigger](panel, T, f, DEFAULT_CONFIG)[0][0])


def channels(panel) -> set[str]:
    f = features_at(panel, T, DEFAULT_CONFIG)
    sos, _ = TRIGGERS["sos"](panel, T, f, DEFAULT_CONFIG)
    return {name for name, mask in layer2(panel, f, DEFAULT_CONFIG, T, sos).items() if mask[0]}


# --- triggers ----------------------------------------------------------------------------------


def _range_then(last_two: list[tuple[float, float, float]], volume_last: float) -> tuple:
    """A quiet range around 10.5 for most of the year, then two custom bars (low, close, volume)."""
    days = np.arange(DAYS)
    close = 10.5 + 0.25 * np.sin(days / 3)
    low, high = close * 0.995, close * 1.005
    volume = np.full(DAYS, 1e7)
    for offset, (bar_low, bar_close, bar_volume) in zip((2, 1), last_two, strict=True):
        close[-offset], low[-offset], high[-offset], volume[-offset] = (
            bar_close,
            bar_low,
            max(bar_close, 10.5) * 1.005,
            bar_volume,
        )
    volume[-1] = volume_last
    return close, volume, high, low


def test_spring_fires_on_a_pierce_bought_back_on_volume():
    close, volume, high, low = _range_then([(10.25, 10.3, 1e7), (9.9, 10.6, 1e7)], 2.5e7)
    assert fires("spring", make_panel(close, volume, high=high, low=low))


def test_spring_does_not_fire_when_the_close_stays_under_support():
    close, volume, high, low = _range_then([(10.25, 10.3, 1e7), (9.9, 10.0, 1e7)], 2.5e7)
    assert not fires("spring", make_panel(close, volume, high=high, low=low))


def test_spring_needs_volume():
    close, volume, high, low = _range_then([(10.25, 10.3, 1e7), (9.9, 10.6, 1e7)], 1.0e7)
    assert not fires("spring", make_panel(close, volume, high=high, low=low))


def _breakout_then_retest(retest_volume: float, breakout_volume: float = 3e7):
    """A year in a range under 10.1, a breakout bar 15 days ago, a drift up, then a 3-day
    pull back to the rising MA20 that holds above the old range."""
    days = np.arange(DAYS)
    close = 10 + 0.1 * np.sin(days / 3)
    close[-16:] = 10.7 * np.cumprod(np.full(16, 1.004))
    close[-3:] = close[-4] * np.array([0.985, 0.975, 0.98])
    volume = np.full(DAYS, 1e7)
    volume[-16] = breakout_volume
    volume[-3:] = retest_volume
    return make_panel(close, volume)


def test_lps_fires_on_a_quiet_retest_after_a_sign_of_strength():
    assert fires("lps", _breakout_then_retest(5e6))


def test_lps_is_not_fooled_by_one_volume_spike_in_the_prior_60_days():
    # the breakout spike is 2.5x the retest's volume, but the retest trades above the usual
    assert not fires("lps", _breakout_then_retest(1.2e7))


def test_lps_needs_a_sign_of_strength_before_the_retest():
    assert not fires("lps", _breakout_then_retest(5e6, breakout_volume=1e7))


def _sos_panel(jump: float, volume_multiple: float):
    close = np.full(DAYS, 10.0) * (1 + 0.002 * np.sin(np.arange(DAYS)))
    close[-1] = close[-2] * (1 + jump)
    volume = np.full(DAYS, 1e7)
    volume[-1] = 1e7 * volume_multiple
    return make_panel(close, volume)


def test_sos_fires_on_a_wide_up_bar_with_heavy_volume():
    assert fires("sos", _sos_panel(0.07, 4))


@pytest.mark.parametrize(("jump", "multiple"), [(0.07, 2), (0.04, 4)])
def test_sos_needs_both_the_bar_and_the_volume(jump, multiple):
    assert not fires("sos", _sos_panel(jump, multiple))


def test_sos_measures_the_60_day_high_on_highs_not_closes():
    close = 10 * np.cumprod(np.full(DAYS, 1.0005))
    close[-1] = close[-2] * 1.07
    volume = np.full(DAYS, 1e7)
    volume[-1] = 4e7
    assert fires("sos", make_panel(close, volume))
    high = close * 1.01
    high[-30] = close[-30] * 1.25  # a long upper shadow a month ago still caps the range
    assert not fires("sos", make_panel(close, volume, high=high))


def _evr_panel(event_move: float):
    close = np.full(DAYS, 10.0)
    close[-2] = 10.0 * (1 + event_move)
    close[-1] = close[-2]
    volume = np.full(DAYS, 1e7)
    volume[-2] = 3e7
    return make_panel(
        close, volume, low=close * 0.99, market_cap=1e10
    )  # 3e8 CNY traded = 3% turnover


def test_evr_fires_on_heavy_volume_without_progress():
    assert fires("evr", _evr_panel(0.01))


def test_evr_does_not_fire_when_the_heavy_bar_falls_hard():
    assert not fires("evr", _evr_panel(-0.05))


def _heavy_bar_without_progress(bars_ago: int):
    close = np.full(DAYS, 10.0)
    volume = np.full(DAYS, 1e7)
    close[DAYS - 1 - bars_ago :] = 10.1
    volume[DAYS - 1 - bars_ago] = 3e7
    return make_panel(close, volume, low=close * 0.99, market_cap=1e10)


def test_evr_looks_at_the_last_two_bars_only():
    assert fires("evr", _heavy_bar_without_progress(0))  # today's bar
    assert fires("evr", _heavy_bar_without_progress(1))
    assert not fires("evr", _heavy_bar_without_progress(2))  # three bars ago is stale


def test_evr_is_no_event_on_a_market_wide_volume_surge():
    # everyone trades 2.5x the usual volume at a 3% turnover with little price change: that
    # is the market's day, not a stock's; a stock trading 6x that day still stands out
    close = np.full(DAYS, 10.0)
    panel = make_panel(close, low=close * 0.99, fillers=200)
    panel.volume[-2] *= 2.5
    panel.volume[-2, 1] *= 6 / 2.5
    panel.turnover_rate[-2] = 0.03
    fired = TRIGGERS["evr"](panel, T, features_at(panel, T, DEFAULT_CONFIG), DEFAULT_CONFIG)[0]
    trading = ~np.isnan(panel.close[T])
    assert fired[trading].mean() < 0.05
    assert fired[1] and fired.sum() == 1


def test_compression_is_no_event_in_a_market_wide_lull():
    # six weeks before a holiday: every stock's ranges narrow and its volume falls to 40%.
    # That is the market's quiet, not each stock's own compression
    panel = make_panel(series((DAYS, 0.001)), fillers=200, filler_drift=0.001)
    width = np.full(panel.close.shape, 0.03)
    width[-30:] = np.linspace(0.02, 0.004, 30)[:, None]
    panel.high[:], panel.low[:] = panel.close * (1 + width / 2), panel.close * (1 - width / 2)
    panel.volume[-30:] *= 0.4
    f = features_at(panel, T, DEFAULT_CONFIG)
    assert TRIGGERS["compression"](panel, T, f, DEFAULT_CONFIG)[0].mean() < 0.05


def test_no_trigger_fires_on_more_than_5_percent_of_the_demo_market_on_any_day(demo_home):
    panel = MarketStore.for_source(demo_home, "demo").load_panel(320)
    for t in range(len(panel.dates) - 60, len(panel.dates)):
        f = features_at(panel, t, DEFAULT_CONFIG)
        trading = ~np.isnan(f.close)
        for name, detect in TRIGGERS.items():
            share = detect(panel, t, f, DEFAULT_CONFIG)[0][trading].mean()
            assert share <= 0.05, f"{name} on {panel.dates[t]}: {share:.1%}"


def _compression_panel(final_range: float, final_volume: float):
    close = series((DAYS, 0.001))
    width = np.full(DAYS, 0.04)
    width[-8:] = np.linspace(0.02, final_range, 8)
    volume = np.full(DAYS, 1e7)
    volume[-10:] = final_volume
    return make_panel(close, volume, high=close * (1 + width / 2), low=close * (1 - width / 2))


def test_compression_fires_when_ranges_and_volume_dry_up():
    assert fires("compression", _compression_panel(0.004, 4e6))


def test_compression_does_not_fire_on_wide_ranges():
    assert not fires("compression", _compression_panel(0.06, 4e6))


def test_compression_counts_gaps_in_the_true_range():
    # narrow bars, but each opens 0.6% under the previous close: the true range is 1.0%
    close = series((DAYS - 6, 0.004), (6, -0.006))
    high, low = close * 1.0045, close * 0.9955
    high[-6:], low[-6:] = close[-6:], close[-6:] * 0.996
    volume = np.full(DAYS, 1e7)
    volume[-10:] = 4e6
    assert not fires("compression", make_panel(close, volume, high=high, low=low))


def _pullback_panel(down_volume: float):
    close = series((DAYS - 5, 0.008), (4, -0.02), (1, 0.01))
    volume = np.full(DAYS, 1e7)
    volume[-5:-1] = down_volume
    return make_panel(close, volume)


def test_trend_pullback_fires_on_a_quiet_dip_in_an_uptrend():
    assert fires("pullback", _pullback_panel(4e6))


def test_trend_pullback_does_not_fire_on_a_heavy_dip():
    assert not fires("pullback", _pullback_panel(1.5e7))


# --- channels -------------------------------------------------------------------------------------


def test_momentum_and_trend_channels_fire_on_a_strong_uptrend():
    panel = make_panel(series((DAYS - 10, 0.0012), (10, 0.006)))
    assert {"momentum", "trend"} <= channels(panel)


def test_bypass_measures_the_drawdown_from_the_60_day_high():
    # a leader that fell 24% in the last 60 days and has fully recovered, flat for 15 days
    # (so the RS gate fails): the structural bypass lets it into the momentum channel
    close = series((DAYS - 60, 0.002), (15, -0.019), (30, 0.0096), (15, 0.0))
    assert "momentum" in channels(make_panel(close))


def test_no_strength_channel_fires_on_a_steady_decline():
    panel = make_panel(series((DAYS, -0.002)))
    assert not channels(panel) & {"momentum", "trend", "breakout", "ambush"}


def test_accumulation_channel_fires_on_a_quiet_base_with_dry_volume():
    close = series((120, -0.003), (DAYS - 120, 0.0)) * (1 + 0.01 * np.sin(np.arange(DAYS) / 4))
    volume = np.full(DAYS, 1e7)
    volume[-20:] = 4e6
    assert "accumulation" in channels(make_panel(close, volume))
    volume[-20:] = 1e7
    assert "accumulation" not in channels(make_panel(close, volume))


def test_dry_volume_channel_fires_on_a_record_low_volume_near_the_lows():
    close = series((DAYS, 0.0)) * (1 + 0.01 * np.sin(np.arange(DAYS) / 4))
    volume = np.random.default_rng(1).uniform(0.8e7, 1.2e7, DAYS)
    volume[-3] = 2e6
    assert "dry_volume" in channels(make_panel(close, volume))
    volume[-3] = 1e7
    assert "dry_volume" not in channels(make_panel(close, volume))


def test_breakout_channel_fires_on_a_fast_rise_from_below_the_ma200():
    close = series((DAYS - 25, -0.001), (25, 0.008))
    volume = np.full(DAYS, 1e7)
    volume[-20:] = 2e7
    assert "breakout" in channels(make_panel(close, volume, fillers=60))
    volume[-20:] = 1e7
    assert "breakout" not in channels(make_panel(close, volume, fillers=60))


def test_ambush_channel_fires_on_a_leader_resting_near_its_ma200():
    close = series((150, 0.0), (110, 0.005), (50, -0.003), (10, -0.0015))
    assert "ambush" in channels(make_panel(close, filler_drift=0.0003))
    assert "ambush" not in channels(make_panel(series((DAYS, -0.001)), filler_drift=0.0003))


def test_divergence_channel_fires_when_the_stock_holds_while_the_index_breaks_down():
    bench = 3000 * np.concatenate([np.ones(DAYS - 20), np.linspace(1, 0.9, 20)])
    close = series((DAYS - 60, -0.001), (60, 0.0005))
    low = close * 0.99
    volume = np.full(DAYS, 1e7)
    volume[-20:] = 1.3e7
    assert "divergence" in channels(make_panel(close, volume, low=low, bench=bench))
    assert "divergence" not in channels(
        make_panel(close, volume, low=low)
    )  # index did not break down


def test_sos_ignition_channel_follows_the_sos_trigger():
    assert "sos_ignition" in channels(_sos_panel(0.07, 4))
    assert "sos_ignition" not in channels(_sos_panel(0.07, 1.5))


# --- funnel, diagnosis, regime --------------------------------------------------------------------


def test_layer1_drops_st_small_illiquid_and_cheap_stocks():
    strong = series((DAYS, 0.001))
    assert run_funnel(make_panel(strong)).layer1[0]
    assert not run_funnel(make_panel(strong, name="*ST目标")).layer1[0]
    assert not run_funnel(make_panel(strong, market_cap=5e8)).layer1[0]
    assert not run_funnel(make_panel(strong, np.full(DAYS, 1e5))).layer1[0]  # ~1m CNY a day
    assert not run_funnel(make_panel(strong * 0.1, np.full(DAYS, 1e8))).layer1[0]  # under 2 CNY


def test_health_is_danger_with_reasons_for_a_broken_holding():
    panel = make_panel(series((DAYS - 10, 0.0), (10, -0.02)))
    result = diagnose(panel, "600000", cost=10.0)
    assert result["health"] == "danger"
    assert any("亏损超过" in r for r in result["reasons"]) and any(
        "近 10 日下跌" in r for r in result["reasons"]
    )


def test_health_is_healthy_for_a_clean_uptrend_above_cost():
    panel = make_panel(series((DAYS, 0.0015)))
    result = diagnose(panel, "600000", cost=10.0)
    assert result["health"] == "healthy" and "均线多头排列" in result["reasons"]


def test_health_is_caution_on_two_warnings():
    close = series((DAYS - 60, 0.0), (30, 0.015), (30, 0.0))  # a 60-day swing over 50%
    volume = np.full(DAYS, 1e7)
    volume[-20:] = 3e6
    result = diagnose(make_panel(close, volume), "600000")
    assert result["health"] == "caution"
    assert any("振幅" in r for r in result["reasons"]) and any(
        "量能" in r for r in result["reasons"]
    )


def _facts(**values: float) -> SimpleNamespace:
    """Features as the health rules read them: one-stock arrays, NaN where not given."""
    names = ("close", "ma50", "ma200", "ret10", "range60", "bias200", "volume3", "volume60")
    names += ("volume20", "volume_prior60", "resumed_after", "delisting")
    return SimpleNamespace(**{n: np.array([values.get(n, np.nan)]) for n in names})


def test_every_danger_and_warning_reads_as_the_user_sees_it():
    f = _facts(
        close=9.0,
        ma50=9.5,
        ma200=10.0,
        ret10=-0.2,
        range60=0.6,
        bias200=0.35,
        volume3=1.0,
        volume60=4.0,
        volume20=1.0,
        volume_prior60=3.0,
    )
    exit_info = {"status": "exit", "detail": "连续 2 日放量收于止损 8.90 下方"}
    health, reasons = holding_health(f, DEFAULT_CONFIG, 10.0, 8.9, exit_info, [], [])
    assert health == "danger"
    assert reasons == [
        "收盘 9.00 较成本 10.00 亏损超过 7%",
        "触发止损：连续 2 日放量收于止损 8.90 下方",
        "股价在 MA50 下方且 MA50 低于 MA200（空头结构）",
        "近 10 日下跌 -20.0%",
        "60 日振幅 60%，波动过大",
        "派发预警：乖离 MA200 35% 且量能萎缩",
        "距离止损 8.90 不到 2%",
        "亏损中且 MA50 低于 MA200",
        "20 日量能不足前 60 日的一半",
    ]


def test_one_warning_with_positives_is_healthy_and_positives_name_their_channel_and_trigger():
    f = _facts(close=9.4, ma50=9.0, ma200=8.0)
    hold = {"status": "hold", "detail": "收盘高于止损 8.00"}
    channels, triggers = ["ambush", "momentum"], ["spring"]
    health, reasons = holding_health(f, DEFAULT_CONFIG, 10.0, 8.0, hold, channels, triggers)
    assert health == "healthy"
    assert reasons == ["均线多头排列", "趋势通道：主升", "触发信号：Spring", "浮亏 6.0%"]
    assert holding_health(f, DEFAULT_CONFIG, 10.0, 8.0, hold, [], []) == (
        "healthy",
        ["均线多头排列", "浮亏 6.0%"],
    )
    no_positive = _facts(close=9.4)
    assert holding_health(no_positive, DEFAULT_CONFIG, 10.0, None, hold, [], []) == (
        "caution",
        ["浮亏 6.0%"],
    )
    assert holding_health(no_positive, DEFAULT_CONFIG, 0.0, None, hold, [], []) == (
        "healthy",
        ["没有风险信号"],
    )


def test_sos_ignition_counts_as_a_trend_channel_for_the_bias_cap():
    # 30% above its MA200 after an SOS bar: over the 25% cap, within the trend channels' 35%
    close = series((DAYS - 20, 0.0), (19, 0.011), (1, 0.07))
    volume = np.full(DAYS, 1e7)
    volume[-1] = 4e7
    panel = make_panel(close, volume, filler_drift=0.002)
    assert channels(panel) & {"momentum", "trend", "breakout"} == set()
    assert run_funnel(panel).triggers["sos"][0]


def test_analyze_lists_only_triggers_within_their_rules():
    # a pullback after a sharp rally from a long decline: no trend channel, so no pullback
    # trigger, and the one warning (a 74% range) is not offset by it
    close = series((DAYS - 35, -0.004), (30, 0.018), (4, -0.018), (1, 0.01))
    volume = np.full(DAYS, 1e7)
    volume[-5:-1] = 4e6
    panel = make_panel(close, volume)
    assert fires("pullback", panel) and not channels(panel) & {"momentum", "trend", "breakout"}
    result = diagnose(panel, "600000")
    assert "趋势回踩" not in result["triggers"]
    assert result["health"] == "caution"


# --- phases and stops ------------------------------------------------------------------------------


def _quiet_base():
    """A year-long decline into a quiet base with dried-up volume (accumulation)."""
    close = series((120, -0.003), (DAYS - 120, 0.0)) * (1 + 0.01 * np.sin(np.arange(DAYS) / 4))
    volume = np.full(DAYS, 1e7)
    volume[-21:] = 4e6
    return close, volume, close * 0.99


def _flat_base_then_limit_downs(days_down: int):
    """A year in a quiet range (closes 9.90-10.10, lows 1% under), volume drying up, the
    last base close 10.00; then -9.9% days (a ±10% board) closing at the low on heavy
    volume: 9.01, 8.12, 7.32, 6.60."""
    close = 10 + 0.1 * np.sin(np.arange(DAYS) / 4)
    volume = np.full(DAYS, 1e7)
    volume[-25:] = 4e6
    base_end = DAYS - 1 - days_down
    close[base_end] = 10.0
    low, high = close * 0.99, close * 1.01
    for t in range(base_end + 1, DAYS):
        close[t] = low[t] = round(close[t - 1] * 0.901, 2)
        high[t], volume[t] = close[t - 1], 2e7
    return make_panel(close, volume, low=low, high=high)


def test_accumulation_stop_holds_through_limit_down_days_and_says_exit():
    # the year's low before the break is 9.90 x 0.99 = 9.801: stop 9.801 x 0.93 = 9.11.
    # Day 1 closes 9.01 under it (watch: one close); day 2 closes 8.12 <= 9.11 x 0.95 = 8.65:
    # exit at once. The breakdown bars' own lows must not drag the stop down with them.
    panel = _flat_base_then_limit_downs(4)
    days = [diagnose(panel, "600000", t=t) for t in range(T - 3, T + 1)]
    assert [d["close"] for d in days] == [9.01, 8.12, 7.32, 6.6]
    assert {d["stop"]["stop"] for d in days} == {9.11}
    assert all(d["stop"]["label"].startswith("吸筹止损") for d in days)
    assert [d["exit"]["status"] for d in days] == ["watch", "exit", "exit", "exit"]
    assert days[-1]["health"] == "danger"


def test_accumulation_phase_b_when_the_last_20_bars_undercut_the_base():
    close, volume, low = _quiet_base()
    assert diagnose(make_panel(close, volume, low=low), "600000")["phase"] == "吸筹 C 段"
    low[-10] = low[-80:-20].min() * 0.95
    assert diagnose(make_panel(close, volume, low=low), "600000")["phase"] == "吸筹 B 段"


def test_outside_accumulation_the_stop_trails():
    # a steady decline sits near its yearly low but is no accumulation: the trailing stop
    # (60-day high x 0.90, MA50 x 0.98) applies, not 0.93 x the yearly low
    result = diagnose(make_panel(series((DAYS, -0.002))), "600000")
    assert result["phase"] == "空头趋势" and result["stop"]["label"].startswith("移动止损")
    assert result["exit"]["status"] == "exit"


WEEKDAYS = np.busday_offset(np.datetime64("2026-03-30"), -np.arange(DAYS)[::-1], roll="forward")


def _falls_on_the_last_bar(dates, suspended_before: bool = False) -> dict:
    panel = make_panel(series((DAYS - 1, 0.002), (1, -0.12)), dates=dates)
    if suspended_before:
        panel.close[-2, 0] = np.nan
    return diagnose(panel, "600000")["exit"]


def test_stop_checks_run_on_a_monday_after_an_ordinary_weekend():
    assert str(WEEKDAYS[-1]) == "2026-03-30" and str(WEEKDAYS[-2]) == "2026-03-27"
    assert _falls_on_the_last_bar(WEEKDAYS)["status"] == "exit"


def test_stop_checks_are_skipped_on_the_first_bar_after_a_holiday():
    holiday = WEEKDAYS.copy()
    holiday[:-1] = np.busday_offset(WEEKDAYS[:-1], -5)  # a week closed before the last bar
    assert _falls_on_the_last_bar(holiday)["status"] == "skipped"


def test_stop_checks_are_skipped_on_the_first_bar_after_a_one_day_suspension():
    assert _falls_on_the_last_bar(WEEKDAYS, suspended_before=True)["status"] == "skipped"


def test_regime_follows_breadth_and_index_structure():
    from wyckoff.engine.regime import market_regime

    rising = make_panel(
        series((DAYS, 0.002)),
        fillers=60,
        filler_drift=0.004,
        bench=3000 * np.cumprod(np.full(DAYS, 1.001)),
    )
    assert market_regime(rising)["regime"] == "RISK_ON"
    falling = make_panel(series((DAYS, -0.002)), fillers=60, filler_drift=-0.004)
    falling_regime = market_regime(falling)
    assert falling_regime["regime"] == "RISK_OFF" and not falling_regime["buy_allowed"]
    rebound = make_panel(
        series((DAYS, 0.002)),
        fillers=60,
        filler_drift=0.004,
        bench=3000 * np.cumprod(np.full(DAYS, 0.999)),
    )
    assert market_regime(rebound)["regime"] == "BEAR_REBOUND"


def test_a_bear_index_blocks_buys_even_with_middling_breadth():
    from wyckoff.engine.regime import market_regime

    def regime_with(bench: np.ndarray) -> dict:
        return market_regime(make_panel(series((DAYS, 0.0)), bench=bench, seed=4))

    bear = 3000 * np.cumprod(np.full(DAYS, 0.999))  # under both MAs
    sharp = bear.copy()
    sharp[-3:] = sharp[-4] * np.cumprod([0.988] * 3)  # and -3.6% in 3 days
    for bench in (bear, sharp):
        regime = regime_with(bench)
        assert 40 < regime["breadth_pct"] < 60
        assert regime["regime"] == "RISK_OFF" and not regime["buy_allowed"]
    assert regime_with(np.full(DAYS, 3000.0))["regime"] == "NEUTRAL"  # same breadth, flat index


def _rally_then_a_fall(fall: float, index_days: int | None):
    """Stocks rising ~2% a day (all far above their MA20), then a day when the index and
    every stock fall by `fall`; the index has `index_days` days of history (None: no index)."""
    bench = 3000 * np.cumprod(np.full(DAYS, 1.002))
    bench[-1] = bench[-2] * (1 + fall)
    if index_days is not None:
        bench[: DAYS - index_days] = np.nan
    panel = make_panel(series((DAYS, 0.02)), fillers=100, filler_drift=0.02, bench=bench)
    panel.close[-1] = panel.close[-2] * (1 + fall)
    if index_days is None:
        panel.index_close = {}
    return panel


def test_without_an_index_trend_high_breadth_is_risk_on_and_says_so():
    from wyckoff.engine.regime import market_regime

    for index_days in (None, 60):  # no index at all; an index with 60 days of history
        regime = market_regime(_rally_then_a_fall(0.0, index_days))
        assert regime["breadth_pct"] >= 60 and regime["trend"] == "unknown"
        assert regime["regime"] == "RISK_ON" and regime["buy_allowed"]
        assert "没有指数趋势数据" in regime["reason"] and not regime["index_trend_used"]


def test_a_six_and_a_half_percent_index_fall_is_no_bear_rebound():
    # 2015-05-28: the index fell 6.5% while most stocks stayed above their MA20 (breadth
    # still >= 60, down less than 10 points), with too little index history for a trend
    from wyckoff.engine.regime import market_regime

    for index_days, measured_by in ((60, "指数 -6.5%"), (None, "个股中位数 -6.5%")):
        regime = market_regime(_rally_then_a_fall(-0.065, index_days))
        assert regime["breadth_pct"] >= 60 and regime["breadth_change"] > -10
        assert regime["regime"] == "RISK_OFF" and not regime["buy_allowed"]
        assert measured_by in regime["reason"]


def test_crash_and_panic_repair():
    from wyckoff.engine.regime import market_regime

    bench = np.full(DAYS, 3000.0)
    bench[-2] = 2940  # -2% on the crash day
    bench[-1] = 2970  # +1% the day after
    panel = make_panel(series((DAYS, 0.0)), fillers=60, bench=bench)
    panel.close[-2, :] = panel.close[-3, :] * 0.95  # everything falls: breadth collapses
    assert market_regime(panel, DAYS - 2)["regime"] == "CRASH"
    assert market_regime(panel, DAYS - 1)["regime"] == "PANIC_REPAIR"


# --- resumption, 退市整理, the tradable prefixes, unknown returns ------------------------------


def _resuming(suspended_bars: int, list_date: str = "20200101") -> dict:
    """Rising quietly, suspended for the bars before the last, back on the last bar."""
    panel = make_panel(series((DAYS, 0.001)), dates=WEEKDAYS)
    panel.close[-1 - suspended_bars : -1, 0] = np.nan
    panel.stocks.loc["600000", "list_date"] = list_date
    return diagnose(panel, "600000")


def test_a_resumption_after_a_long_suspension_is_a_danger():
    resumed = _resuming(30)
    assert resumed["health"] == "danger"
    assert any(r.startswith("停牌约 30 个交易日后刚复牌") for r in resumed["reasons"])
    assert _resuming(3)["health"] == "healthy"  # a few days off is no such risk


def test_a_first_bar_after_years_of_suspension_is_a_danger():
    # *ST新亿: listed long ago, no bar in the loaded window until today (1,110 days suspended)
    resumed = _resuming(DAYS - 1)
    assert resumed["health"] == "danger" and any("刚复牌" in r for r in resumed["reasons"])
    assert resumed["returns_pct"]["20d"] is None  # unknown, not 0.0%


def test_delisting_period_stocks_leave_layer_1_and_302_chinext_codes_are_tradable():
    panel = make_panel(series((DAYS, 0.002)))
    panel.stocks.loc["600001", "name"] = "某某退"
    panel.stocks.loc["600002", "name"] = "退市某某"
    panel.codes[3] = "302132"
    panel.stocks = panel.stocks.rename(index={"600003": "302132"})
    layer1 = run_funnel(panel).layer1
    assert not layer1[1] and not layer1[2] and layer1[3] and layer1[4]
    flagged = diagnose(panel, "600001")
    assert flagged["health"] == "danger"
    assert any(r.startswith("退市整理期") for r in flagged["reasons"])
    # Today's name says nothing of the months before the 15-day period: no look-ahead.
    before, inside = run_funnel(panel, t=DAYS - 16).layer1, run_funnel(panel, t=DAYS - 15).layer1
    assert before[1] and before[2] and not inside[1] and not inside[2]
    earlier = diagnose(panel, "600001", t=DAYS - 16)["reasons"]
    assert not any(r.startswith("退市整理期") for r in earlier)


def test_diagnoses_sharing_one_panel_equal_each_on_a_fresh_panel():
    """The alert check diagnoses many stocks on days t and t-1 from one panel, which keeps
    the market-wide ranks of each day; each result must be what a panel of its own gives."""
    shared = make_panel(series((DAYS, 0.002)), fillers=40)
    asked = [(code, t) for code in shared.codes[:8] for t in (T, T - 1)]
    together = [diagnose(shared, code, cost=10.0, t=t) for code, t in asked]
    alone = [
        diagnose(make_panel(series((DAYS, 0.002)), fillers=40), code, cost=10.0, t=t)
        for code, t in asked
    ]
    assert together == alone
    assert {d["rps50"] for d in together} != {100.0}  # ranked against the market, not itself
