"""The intraday rescue check for a holding that broke its stop during the day: a shakeout
that takes back the stop and VWAP by the close (持有观察), a half recovery (减仓), or a
breakdown that stays under both (离场)."""

from __future__ import annotations

from dataclasses import dataclass

from wyckoff.engine.intraday import IntradayFacts

HOLD, TRIM, EXIT = "持有观察", "减仓", "离场"


@dataclass(frozen=True)
class RescueVerdict:
    verdict: str
    broke: bool
    reasons: list[str]


def rescue_verdict(f: IntradayFacts, stop: float, support: float | None) -> RescueVerdict:
    """The verdict for a holding with `stop` at `f.as_of`."""
    if f.day_low >= stop:
        return RescueVerdict(HOLD, False, [f"盘中最低 {f.day_low:.2f} 未跌破止损 {stop:.2f}"])
    above_stop, above_vwap = f.price >= stop, f.price >= f.vwap
    reasons = [f"盘中最低 {f.day_low:.2f} 跌破止损 {stop:.2f}"]
    reasons.append(
        f"现价 {f.price:.2f} {'已收回' if above_stop else '仍在'}止损{'上方' if above_stop else '下方'}"
    )
    reasons.append(f"{'站上' if above_vwap else '低于'} VWAP {f.vwap:.2f}（{f.vs_vwap_pct:+.1f}%）")
    if support is not None and f.price < support:
        reasons.append(f"跌破确认支撑 {support:.2f}")
    if above_stop and above_vwap:
        return RescueVerdict(HOLD, True, [*reasons, "跌破后收回止损和 VWAP：更像洗盘，按收盘确认"])
    if not above_stop and not above_vwap:
        return RescueVerdict(EXIT, True, [*reasons, "收回失败，止损和 VWAP 下方运行：破位"])
    return RescueVerdict(TRIM, True, [*reasons, "只收回一半（止损或 VWAP 其一）：先减仓，收盘再看"])
