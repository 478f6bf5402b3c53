"""The tail-session check: from a stock's minute path after 14:30 and its daily context, a
verdict 可买 / 观察 / 放弃 (持仓破位预警 for a holding under its stop or support), with the
reasons in Chinese and what could not be checked.

The user's playbook (a remembered rule such as "尾盘二次确认买入：14:45 后检查支撑、VWAP、收盘
位置和量能；跌破确认支撑或极端放量冲高回落时禁止买入") is quoted and applied: each check it names
becomes a hard condition (failing it is 放弃, not 观察) and its "HH:MM 后" is the earliest
minute a buy is allowed. A playbook only ever makes a verdict stricter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time
from typing import Any

from wyckoff.engine.intraday import IntradayFacts
from wyckoff.engine.regime import BUY_BLOCKED, REGIME_LABELS

BUY, WATCH, SKIP, BREAK = "可买", "观察", "放弃", "持仓破位预警"

CHECK_LABELS = {
    "support": "确认支撑",
    "vwap": "VWAP",
    "close_position": "收盘位置",
    "volume": "量能",
    "fall_from_high": "冲高回落",
}
# words in a playbook that name each check
CHECK_WORDS = {
    "support": ("支撑",),
    "vwap": ("vwap", "均价"),
    "close_position": ("收盘位置", "收盘位", "收在"),
    "volume": ("量能", "放量", "成交量", "缩量"),
    "fall_from_high": ("冲高回落", "高点回落"),
}
PLAYBOOK_TIME = re.compile(r"(1[0-4])[:：](\d{2})\s*(?:分)?\s*(?:后|之后|以后)")


@dataclass(frozen=True)
class TailRules:
    near_high_pct: float = 1.5  # at most this far under the day's high for 可买
    range_position: float = 0.7  # at least this high in the day's range
    last30_return_pct: float = -0.3  # the last 30 minutes fell no more than this
    tail_share: float = 0.30  # the last 30 minutes' share of the day's volume, at most
    tail_volume: float = 2.5  # vs the same 30 minutes of recent days, at most (modest)
    extreme_tail_volume: float = 3.0  # this much more than usual is extreme
    extreme_tail_share: float = 0.40
    fall_from_high_pct: float = 3.0  # with extreme volume, a fall this large is a rejection


RULES = TailRules()


@dataclass(frozen=True)
class DailyContext:
    """The daily facts a verdict needs, from the bars before today."""

    support: float | None  # the confirmed support (see agents/intraday.py)
    stop: float | None
    limit_down: float | None
    limit_up: float | None
    regime: str | None
    holding: bool = False


@dataclass(frozen=True)
class Playbook:
    text: str
    checks: frozenset[str]
    not_before: time | None

    @classmethod
    def parse(cls, text: str) -> Playbook:
        lowered = text.lower()
        checks = {key for key, words in CHECK_WORDS.items() if any(w in lowered for w in words)}
        moment = PLAYBOOK_TIME.search(text)
        not_before = time(int(moment[1]), int(moment[2])) if moment else None
        return cls(text, frozenset(checks), not_before)


@dataclass
class TailVerdict:
    verdict: str
    reasons: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    playbook: dict[str, Any] | None = None


@dataclass
class _Findings:
    """What the checks found: (check, sentence) that forbid a buy or ask to wait, and the good."""

    blocking: list[tuple[str, str]] = field(default_factory=list)
    waiting: list[tuple[str, str]] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)


def tail_verdict(
    f: IntradayFacts,
    daily: DailyContext,
    playbook: Playbook | None = None,
    rules: TailRules = RULES,
) -> TailVerdict:
    """The verdict for a stock at `f.as_of` (after 14:30; the caller checks the time)."""
    broken = _holding_break(f, daily)
    findings = _Findings()
    _check_price_levels(f, daily, findings)
    _check_path(f, rules, findings)
    _check_market(daily, findings)
    if playbook is not None:
        _apply_playbook(f, playbook, findings)
    verdict = BREAK if broken else _verdict(findings)
    reasons = broken + [s for _, s in findings.blocking + findings.waiting]
    if verdict == BUY:
        reasons = findings.passed
    return TailVerdict(
        verdict,
        reasons,
        findings.unchecked,
        _playbook_summary(playbook) if playbook else None,
    )


def _verdict(findings: _Findings) -> str:
    if findings.blocking:
        return SKIP
    return WATCH if findings.waiting else BUY


def _holding_break(f: IntradayFacts, daily: DailyContext) -> list[str]:
    if not daily.holding:
        return []
    if daily.stop is not None and f.price < daily.stop:
        return [f"持仓跌破止损 {daily.stop:.2f}（现价 {f.price:.2f}）"]
    if daily.support is not None and f.price < daily.support:
        return [f"持仓跌破确认支撑 {daily.support:.2f}（现价 {f.price:.2f}）"]
    return []


def _check_price_levels(f: IntradayFacts, daily: DailyContext, found: _Findings) -> None:
    if daily.support is None:
        found.unchecked.append("没有足够日线确定支撑位，未检查是否跌破支撑")
    elif f.price < daily.support:
        found.blocking.append(
            ("support", f"跌破确认支撑 {daily.support:.2f}（现价 {f.price:.2f}）")
        )
    else:
        distance = (f.price / daily.support - 1) * 100
        found.passed.append(f"守住确认支撑 {daily.support:.2f}（高出 {distance:.1f}%）")
    if daily.limit_up is None:
        found.unchecked.append("没有昨收，未判断涨跌停")
    elif f.price >= daily.limit_up:
        found.waiting.append(("limit", f"涨停 {daily.limit_up:.2f}：封板时买不进，只能观察"))
    elif daily.limit_down is not None and f.price <= daily.limit_down:
        found.blocking.append(("limit", f"跌停 {daily.limit_down:.2f}"))


def _check_path(f: IntradayFacts, rules: TailRules, found: _Findings) -> None:
    tail_volume = f.tail_volume_vs_recent
    if tail_volume is None:
        found.unchecked.append("没有近几日同时段的分钟线，尾盘量能只按当天占比判断")
    extreme = f.last30_volume_share >= rules.extreme_tail_share or (
        tail_volume is not None and tail_volume >= rules.extreme_tail_volume
    )
    if extreme and f.drop_from_high_pct >= rules.fall_from_high_pct:
        found.blocking.append(
            (
                "fall_from_high",
                f"极端放量冲高回落：尾盘量能{_volume_words(f)}，距日内高点回落 "
                f"{f.drop_from_high_pct:.1f}%",
            )
        )
    if f.vs_vwap_pct < 0:
        found.waiting.append(("vwap", f"现价低于 VWAP {f.vwap:.2f}（{f.vs_vwap_pct:+.1f}%）"))
    else:
        found.passed.append(f"现价在 VWAP {f.vwap:.2f} 上方（{f.vs_vwap_pct:+.1f}%）")
    if f.drop_from_high_pct > rules.near_high_pct or f.range_position < rules.range_position:
        # named by what failed: a close high in the range can still be far off the high
        low = f.range_position < rules.range_position
        found.waiting.append(
            (
                "close_position",
                f"{'收盘位置偏低' if low else '离日内高点较远'}：距日内高点回落 "
                f"{f.drop_from_high_pct:.1f}%，位于日内区间 {f.range_position:.0%} 处",
            )
        )
    else:
        found.passed.append(
            f"收在日内高位（区间 {f.range_position:.0%} 处，距高点 {f.drop_from_high_pct:.1f}%）"
        )
    if f.last30_return_pct < rules.last30_return_pct:
        found.waiting.append(("close_position", f"尾盘 30 分钟下跌 {-f.last30_return_pct:.1f}%"))
    big = f.last30_volume_share > rules.tail_share or (
        tail_volume is not None and tail_volume > rules.tail_volume
    )
    if big:
        found.waiting.append(("volume", f"尾盘量能过大：{_volume_words(f)}"))
    else:
        found.passed.append(f"尾盘量能温和：{_volume_words(f)}")


def _volume_words(f: IntradayFacts) -> str:
    words = f"最后 30 分钟占全天 {f.last30_volume_share:.0%}"
    if f.tail_volume_vs_recent is not None:
        words += f"，是近几日同时段的 {f.tail_volume_vs_recent:.1f} 倍"
    return words


def _check_market(daily: DailyContext, found: _Findings) -> None:
    if daily.regime is None:
        found.unchecked.append("没有市场状态，未检查大盘环境")
    elif daily.regime in BUY_BLOCKED:
        found.waiting.append(("regime", f"市场状态为{REGIME_LABELS[daily.regime]}：不开新仓"))
    else:
        found.passed.append(f"市场状态{REGIME_LABELS[daily.regime]}，允许开仓")


def _apply_playbook(f: IntradayFacts, playbook: Playbook, found: _Findings) -> None:
    """The checks the playbook names forbid a buy when they fail; its time must have come."""
    named = [(k, s) for k, s in found.waiting if k in playbook.checks]
    for key, sentence in named:
        found.waiting.remove((key, sentence))
        found.blocking.append((key, f"{sentence}（违反你的剧本：{CHECK_LABELS[key]}）"))
    if playbook.not_before and f.as_of.time() < playbook.not_before:
        found.waiting.append(
            ("time", f"你的剧本要求 {playbook.not_before:%H:%M} 后确认，现在 {f.as_of:%H:%M}")
        )


def _playbook_summary(playbook: Playbook) -> dict[str, Any]:
    return {
        "quote": playbook.text,
        "applied": [CHECK_LABELS[k] for k in CHECK_LABELS if k in playbook.checks],
        "not_before": f"{playbook.not_before:%H:%M}" if playbook.not_before else None,
    }
