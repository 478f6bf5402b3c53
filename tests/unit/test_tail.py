"""The tail-session verdict on hand-built minute paths: each rule of issue #27 and the
user's playbook applied."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from wyckoff.engine.intraday import intraday_facts, strength, volume_profile
from wyckoff.engine.minute_bars import session_slots
from wyckoff.engine.tail import DailyContext, Playbook, tail_verdict

DAY = date(2026, 12, 2)
UNTIL_1450 = 230  # one-minute bars from 09:31 to 14:50


def path(prices, volumes=None, day: date = DAY) -> pd.DataFrame:
    """One-minute bars whose closes follow `prices` (interpolated between (minute, price)
    points), each bar opening at the previous close."""
    where, values = zip(*prices, strict=True)
    closes = np.round(np.interp(np.arange(UNTIL_1450), where, values), 2)
    opens = np.concatenate([[values[0]], closes[:-1]])
    volume = np.full(UNTIL_1450, 10_000.0) if volumes is None else np.asarray(volumes, float)
    return pd.DataFrame(
        {
            "ts": session_slots(day, 1)[:UNTIL_1450],
            "open": opens,
            "high": np.maximum(opens, closes),
            "low": np.minimum(opens, closes),
            "close": closes,
            "volume": volume,
            "amount": volume * (opens + closes) / 2,
        }
    )


def recent_days(n: int = 3) -> list[pd.DataFrame]:
    return [path([(0, 10.0), (229, 10.0)], day=date(2026, 11, 27 + k)) for k in range(n)]


def context(**overrides) -> DailyContext:
    values = {"support": 9.5, "stop": 9.2, "limit_down": 9.0, "limit_up": 11.0, "regime": "NEUTRAL"}
    return DailyContext(**{**values, **overrides})


RISING = [(0, 10.0), (180, 10.2), (229, 10.4)]  # climbs all day, closes at its high


def test_above_vwap_near_the_high_with_modest_tail_volume_is_a_buy():
    facts = intraday_facts(path(RISING), 10.0, recent_days())
    result = tail_verdict(facts, context())
    assert result.verdict == "可买", result.reasons
    assert any("VWAP" in r for r in result.reasons) and any(
        "守住确认支撑" in r for r in result.reasons
    )
    assert result.unchecked == []


def test_breaking_the_confirmed_support_after_1430_is_skip():
    falling = [(0, 10.0), (200, 9.8), (229, 9.4)]
    result = tail_verdict(intraday_facts(path(falling), 10.0, recent_days()), context())
    assert result.verdict == "放弃"
    assert any(r.startswith("跌破确认支撑 9.50") for r in result.reasons)


def test_at_the_up_limit_is_watch_because_it_cannot_be_bought():
    locked = [(0, 10.5), (100, 11.0), (229, 11.0)]
    result = tail_verdict(intraday_facts(path(locked), 10.0, recent_days()), context())
    assert result.verdict == "观察"
    assert any("涨停 11.00" in r and "买不进" in r for r in result.reasons)


def test_risk_off_is_never_a_buy():
    result = tail_verdict(
        intraday_facts(path(RISING), 10.0, recent_days()), context(regime="RISK_OFF")
    )
    assert result.verdict == "观察" and any("不开新仓" in r for r in result.reasons)


def test_extreme_volume_with_a_fall_from_the_high_is_skip():
    spike = [(0, 10.0), (205, 10.8), (229, 10.3)]
    volumes = [10_000.0] * 200 + [120_000.0] * 30
    result = tail_verdict(intraday_facts(path(spike, volumes), 10.0, recent_days()), context())
    assert result.verdict == "放弃"
    assert any(r.startswith("极端放量冲高回落") for r in result.reasons)


def test_a_holding_under_its_stop_gets_the_break_warning():
    falling = [(0, 9.6), (229, 9.1)]
    facts = intraday_facts(path(falling), 9.6, recent_days())
    result = tail_verdict(facts, context(holding=True))
    assert result.verdict == "持仓破位预警" and "持仓跌破止损 9.20" in result.reasons[0]


def test_without_recent_minutes_the_verdict_says_what_it_could_not_check():
    result = tail_verdict(intraday_facts(path(RISING), 10.0), context(support=None))
    assert result.verdict == "可买"
    assert any("近几日同时段" in u for u in result.unchecked)
    assert any("支撑" in u for u in result.unchecked)


PLAYBOOK = "尾盘二次确认买入：14:45 后检查支撑、VWAP、收盘位置和量能；跌破确认支撑或极端放量冲高回落时禁止买入"


def test_the_playbook_is_quoted_and_its_checks_become_hard():
    dipped = [(0, 10.0), (100, 10.6), (229, 10.2)]  # under its VWAP at the close
    facts = intraday_facts(path(dipped), 10.0, recent_days())
    assert tail_verdict(facts, context()).verdict == "观察"
    result = tail_verdict(facts, context(), Playbook.parse(PLAYBOOK))
    assert result.verdict == "放弃"
    assert any("违反你的剧本：VWAP" in r for r in result.reasons)
    assert result.playbook["quote"] == PLAYBOOK and result.playbook["not_before"] == "14:45"
    assert result.playbook["applied"] == ["确认支撑", "VWAP", "收盘位置", "量能", "冲高回落"]


def test_the_playbook_time_holds_a_buy_until_it_comes():
    early = path(RISING).iloc[:220]  # 14:40
    result = tail_verdict(
        intraday_facts(early, 10.0, recent_days()), context(), Playbook.parse(PLAYBOOK)
    )
    assert result.verdict == "观察" and "你的剧本要求 14:45 后确认，现在 14:40" in result.reasons


def test_strength_shows_its_parts_and_the_profile_adds_up():
    facts = intraday_facts(path(RISING), 10.0, recent_days())
    score, parts = strength(facts)
    assert score == sum(parts.values()) and 0 <= score <= 100 and score >= 75
    profile = volume_profile(path(RISING))
    assert profile[0]["from"] == "09:30" and abs(sum(p["share_pct"] for p in profile) - 100) < 0.5


def test_rescue_tells_a_shakeout_from_a_breakdown():
    from wyckoff.engine.rescue import rescue_verdict

    shakeout = intraday_facts(path([(0, 10.0), (120, 9.3), (229, 10.1)]), 10.0)
    assert rescue_verdict(shakeout, 9.5, 9.4).verdict == "持有观察"
    assert rescue_verdict(shakeout, 9.5, 9.4).broke
    breakdown = intraday_facts(path([(0, 10.0), (60, 9.6), (229, 9.2)]), 10.0)
    result = rescue_verdict(breakdown, 9.5, 9.4)
    assert result.verdict == "离场" and "跌破确认支撑 9.40" in result.reasons
    half = intraday_facts(path([(0, 10.0), (200, 9.2), (229, 9.55)]), 10.0)  # over stop, under VWAP
    assert rescue_verdict(half, 9.5, None).verdict == "减仓"
    untouched = intraday_facts(path(RISING), 10.0)
    assert rescue_verdict(untouched, 9.5, None).verdict == "持有观察"
    assert not rescue_verdict(untouched, 9.5, None).broke


def test_a_close_high_in_the_range_but_off_the_high_is_not_called_low():
    """At 80% of the day's range, 1.6% under the high, the reason said 收盘位置偏低; a fall in
    the last 30 minutes read 下跌 -1.1%."""
    off_the_high = [(0, 10.0), (150, 10.6), (200, 10.55), (229, 10.43)]
    result = tail_verdict(intraday_facts(path(off_the_high), 10.0, recent_days()), context())
    (where,) = [r for r in result.reasons if "距日内高点回落" in r]
    assert "偏低" not in where and where.startswith("离日内高点较远")
    (fall,) = [r for r in result.reasons if r.startswith("尾盘 30 分钟下跌")]
    assert "-" not in fall
