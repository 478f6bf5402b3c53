"""One stock's diagnosis: phase, stop levels and exit status, holding health with reasons."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from wyckoff.engine.calendar import skipped_weekdays
from wyckoff.engine.funnel import (
    CHANNEL_LABELS,
    TREND_CHANNELS,
    in_delisting_period,
    layer2,
    layer4,
    market_triggers,
)
from wyckoff.engine.indicators import features_at, nan_reduce, percentile_rank, ret
from wyckoff.engine.panel import Panel
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig
from wyckoff.engine.triggers import TRIGGER_LABELS, TRIGGERS

HEALTH_LABELS = {"healthy": "🟢 健康", "caution": "🟡 注意", "danger": "🔴 危险"}


def stock_features(p: Panel, code: str, t: int, cfg: EngineConfig) -> SimpleNamespace:
    """Features of one stock, with RPS ranked against the whole panel (cheap: two returns),
    plus the suspension it resumed from and whether it is in 退市整理."""
    one = p.single(code)
    f = features_at(one, t, cfg)
    j = p.column(code)
    for n in (50, 120):
        ranks = p.memo(("rps", n, t), lambda n=n: percentile_rank(ret(p.close, t, n)))
        setattr(f, f"rps{n}", ranks[j : j + 1])
    f.resumed_after = np.array([resumed_after(one, t, cfg)], dtype=float)
    delisting = p.memo(("delisting", t), lambda: in_delisting_period(p, t))
    f.delisting = delisting[j : j + 1].astype(float)
    return f


def resumed_after(one: Panel, t: int, cfg: EngineConfig) -> int:
    """The longest suspension (skipped weekdays) a one-stock panel came back from within its
    last `resumption_watch_bars` bars up to t. A stock listed before the panel starts whose
    first bar in it is among them was suspended at least since the panel's first day."""
    dates = one.dates
    traded = np.flatnonzero(~np.isnan(one.close[: t + 1, 0]))
    first = max(len(traded) - cfg.resumption_watch_bars, 0)
    gaps = [
        skipped_weekdays(dates[traded[k - 1]], dates[traded[k]])
        for k in range(max(first, 1), len(traded))
    ]
    if first == 0 and len(traded) and traded[0] > 0 and _listed_before(one, dates[0]):
        gaps.append(int(np.busday_count(dates[0], dates[traded[0]])))
    return max(gaps, default=0)


def _listed_before(one: Panel, day: np.datetime64) -> bool:
    listed = one.stock_list.listing_date(0)
    return listed is not None and np.datetime64(listed) < day


def scalar(value) -> float | None:
    v = float(np.asarray(value).reshape(-1)[0])
    return None if np.isnan(v) else v


def stops(one: Panel, t: int, cfg: EngineConfig) -> dict[str, Any]:
    """The stop in force on day t for a one-stock panel, from bars before it (ENGINE.md): in
    accumulation, the 250-day low x 0.93 until the close is 15% above that low, measured on
    the range before any breakdown; otherwise (and after that) the trailing stop
    max(60-day high x 0.90, MA50 x 0.98)."""
    unknown = {"stop": None, "kind": None, "label": "数据不足"}
    traded = np.flatnonzero(~np.isnan(one.close[:t, 0]))
    if not len(traded):
        return unknown
    last = int(traded[-1])  # the last bar before today (before a suspension, if any)
    before = features_at(one, last, cfg)
    if scalar(before.low250) is None or scalar(before.close) is None:
        return unknown
    intact = _range_before_break(one, traded, cfg)
    at_range = before if intact == last else features_at(one, intact, cfg)
    low250, close = scalar(at_range.low250), scalar(at_range.close)
    accumulating = phase(one, one.codes[0], intact, at_range, cfg).startswith("accumulation")
    if accumulating and close < low250 * (1 + cfg.trail_start):
        return {
            "stop": round(low250 * cfg.accumulation_stop, 2),
            "kind": "accumulation",
            "label": f"吸筹止损：250 日最低价 × {cfg.accumulation_stop}",
        }
    trail = max(
        (scalar(before.high60) or 0) * cfg.trail_high, (scalar(before.ma50) or 0) * cfg.trail_ma50
    )
    return {
        "stop": round(trail, 2),
        "kind": "trailing",
        "label": f"移动止损：60 日最高价 × {cfg.trail_high} 与 MA50 × {cfg.trail_ma50} 取高",
    }


def stop_in_force(engine: dict[str, Any], own_stop: float | None) -> dict[str, Any]:
    """Stops only tighten: the holder's own stop when it is above the engine's."""
    if not own_stop or (engine["stop"] is not None and own_stop <= engine["stop"]):
        return engine
    engine_note = f"，高于引擎止损 {engine['stop']:.2f}" if engine["stop"] is not None else ""
    return {
        "stop": round(own_stop, 2),
        "kind": "own",
        "label": f"持仓止损{engine_note}（止损只上移）",
    }


def _range_before_break(one: Panel, traded: np.ndarray, cfg: EngineConfig) -> int:
    """The last traded bar that did not close under the 250-day low of the bars before it:
    the range as it stood before a breakdown. Breakdown bars set new lows; measured with
    them, the accumulation stop would fall with every limit-down day and never be hit."""
    lows, closes = one.low[:, 0], one.close[:, 0]
    for s in traded[::-1][: cfg.breakdown_lookback]:
        prior_low = nan_reduce(np.nanmin, lows[max(s - 250, 0) : s]) if s else np.nan
        if not closes[s] < prior_low:
            return int(s)
    return int(traded[-1])


def exit_status(
    p: Panel, code: str, t: int, stop: float | None, cfg: EngineConfig
) -> dict[str, Any]:
    if stop is None:
        return {"status": "unknown", "detail": "数据不足"}
    j = p.column(code)
    if _first_bar_after_gap(p, j, t, cfg):
        return {"status": "skipped", "detail": "停牌或长假后的第一个交易日不做止损判断"}
    closes, volumes = p.close[: t + 1, j], p.volume[: t + 1, j]
    close = closes[-1]
    if close <= stop * (1 - cfg.hard_breach):
        return {
            "status": "exit",
            "detail": f"收盘 {close:.2f} 跌破止损 {stop:.2f} 超过 {cfg.hard_breach:.0%}，应立即离场",
        }
    vol20 = np.nanmean(volumes[-20:])
    below = [
        (c < stop and v >= cfg.breach_volume * vol20)
        for c, v in zip(closes[-cfg.breach_closes :], volumes[-cfg.breach_closes :], strict=True)
    ]
    if len(below) == cfg.breach_closes and all(below):
        return {
            "status": "exit",
            "detail": f"连续 {cfg.breach_closes} 日放量收于止损 {stop:.2f} 下方",
        }
    if close < stop:
        return {"status": "watch", "detail": f"收盘低于止损 {stop:.2f}，等待确认"}
    return {"status": "hold", "detail": f"收盘高于止损 {stop:.2f}"}


def _first_bar_after_gap(p: Panel, j: int, t: int, cfg: EngineConfig) -> bool:
    """True on the stock's first bar after >= gap_skip_weekdays skipped weekdays."""
    traded = np.flatnonzero(~np.isnan(p.close[:t, j]))
    if not len(traded):
        return False
    return skipped_weekdays(p.dates[traded[-1]], p.dates[t]) >= cfg.gap_skip_weekdays


def phase(p: Panel, code: str, t: int, f: SimpleNamespace, cfg: EngineConfig) -> str:
    j = p.column(code)
    close = p.close[: t + 1, j]
    if _in_markup(close, t):
        return "markup"
    if _accumulating(close[-1], f, cfg):
        return _accumulation_stage(p.low[: t + 1, j], cfg)
    ma50, ma200, c = scalar(f.ma50), scalar(f.ma200), close[-1]
    if ma50 and ma200 and c > ma50 > ma200:
        return "uptrend"
    if ma50 and ma200 and c < ma50 < ma200:
        return "downtrend"
    return "range"


def _in_markup(close: np.ndarray, t: int) -> bool:
    """MA50 crossed above MA200 within 10 bars, stayed above 5 bars and rose >= 2% in 5."""
    if t < 215:
        return False
    ma50, ma200 = (  # the last 16 days' MAs
        nan_reduce(np.nanmean, sliding_window_view(close[t - 14 - n : t + 1], n), axis=1)
        for n in (50, 200)
    )
    above = ma50 > ma200
    crossed = any(above[k] and not above[k - 1] for k in range(len(above) - 10, len(above)))
    return bool(crossed and above[-5:].all() and ma50[-1] / ma50[-6] - 1 >= 0.02)


def _accumulating(close: float, f: SimpleNamespace, cfg: EngineConfig) -> bool:
    """Low in the year's range, MAs close together and volume drying up."""
    low250, ma_gap = scalar(f.low250), scalar(f.ma_gap)
    dry = (scalar(f.volume20) or 0) < (
        scalar(f.volume_prior120) or np.inf
    ) * cfg.accumulation_volume_ratio
    return bool(
        low250
        and close <= low250 * cfg.low_position
        and ma_gap is not None
        and ma_gap < cfg.accumulation_ma_gap
        and dry
    )


def _accumulation_stage(lows: np.ndarray, cfg: EngineConfig) -> str:
    """A/B/C against the base: the 60 bars before the last 20. B = the base low tested >= 3
    times; C = B and the last 20 bars made no new low (the range is tested from above)."""
    recent, base_bars = lows[-20:], lows[-80:-20]
    if np.isnan(base_bars).all():
        return "accumulation_a"
    base = np.nanmin(base_bars)
    tested = np.sum(base_bars <= base * (1 + cfg.accumulation_test_band)) >= cfg.accumulation_tests
    if not tested:
        return "accumulation_a"
    if np.nanmin(recent) >= base * cfg.accumulation_hold:
        return "accumulation_c"
    return "accumulation_b"


PHASE_LABELS = {
    "markup": "上涨（Markup）",
    "accumulation_a": "吸筹 A 段",
    "accumulation_b": "吸筹 B 段",
    "accumulation_c": "吸筹 C 段",
    "uptrend": "多头趋势",
    "downtrend": "空头趋势",
    "range": "震荡",
}


def diagnose(
    p: Panel,
    code: str,
    cost: float = 0.0,
    t: int | None = None,
    cfg: EngineConfig = DEFAULT_CONFIG,
    own_stop: float | None = None,
) -> dict[str, Any]:
    """Everything about one stock at day t: health with reasons, MAs, channels, phase,
    triggers, stop and exit status, volume and return ratios, position in the year's range.
    `own_stop` is the holder's stop: the higher of it and the engine's is the one stop the
    exit status, the health reasons and the output all use."""
    t = len(p.dates) - 1 if t is None else t
    f = stock_features(p, code, t, cfg)
    one = p.single(code)
    close = scalar(f.close)
    if close is None:
        return {"code": code, "error": "该股在最新交易日没有行情（停牌或未上市）"}
    sos_fired, _ = TRIGGERS["sos"](one, t, f, cfg)
    channel_masks = layer2(one, f, cfg, t, sos_fired)
    channels = [name for name, mask in channel_masks.items() if mask[0]]
    j = p.column(code)
    fired, scores = market_triggers(p, t, cfg)
    detected = (
        {name: mask[j : j + 1] for name, mask in fired.items()},
        {name: score[j : j + 1] for name, score in scores.items()},
    )
    trigger_masks, _ = layer4(one, t, f, cfg, channel_masks, detected)
    triggers = [name for name, mask in trigger_masks.items() if mask[0]]
    stop = stop_in_force(stops(one, t, cfg), own_stop)
    exit_info = exit_status(p, code, t, stop["stop"], cfg)
    ma20, ma50, ma200 = scalar(f.ma20), scalar(f.ma50), scalar(f.ma200)
    health, reasons = holding_health(f, cfg, cost, stop["stop"], exit_info, channels, triggers)
    return {
        "code": code,
        "close": round(close, 2),
        "health": health,
        "health_label": HEALTH_LABELS[health],
        "reasons": reasons,
        "phase": PHASE_LABELS[phase(p, code, t, f, cfg)],
        "ma": {
            "ma20": _r(ma20),
            "ma50": _r(ma50),
            "ma200": _r(ma200),
            "pattern": ma_pattern(close, ma20, ma50, ma200),
        },
        "channels": [CHANNEL_LABELS[c] for c in channels],
        "triggers": [TRIGGER_LABELS[t] for t in triggers],
        "stop": stop,
        "exit": exit_info,
        **_ratios(f, close, cost),
    }


def _ratios(f: SimpleNamespace, close: float, cost: float) -> dict[str, Any]:
    """RPS, returns, volume ratios, distance from the year's range and from the cost."""
    low250, high250 = scalar(f.low250), scalar(f.high250)
    return {
        "rps50": _r(scalar(f.rps50), 1),
        "rps120": _r(scalar(f.rps120), 1),
        "returns_pct": {f"{n}d": _pct(scalar(getattr(f, f"ret{n}"))) for n in (5, 20, 60, 120)},
        "volume_ratio_5_20": _r(_ratio(scalar(f.volume5), scalar(f.volume20)), 2),
        "volume_ratio_20_prior60": _r(_ratio(scalar(f.volume20), scalar(f.volume_prior60)), 2),
        "from_year_high_pct": _r((close / high250 - 1) * 100, 1) if high250 else None,
        "from_year_low_pct": _r((close / low250 - 1) * 100, 1) if low250 else None,
        "cost": cost or None,
        "pnl_pct": _r((close / cost - 1) * 100, 2) if cost else None,
    }


def _pct(fraction: float | None) -> float | None:
    """A fraction as a percentage; None (unknown: too little history) stays None, not 0%."""
    return None if fraction is None else _r(fraction * 100, 2)


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top is not None and bottom else None


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None or np.isnan(value) else round(float(value), digits)


def ma_pattern(close: float, ma20: float | None, ma50: float | None, ma200: float | None) -> str:
    if None in (ma20, ma50, ma200):
        return "数据不足"
    if close > ma20 > ma50 > ma200:
        return "多头排列"
    if close < ma20 < ma50 < ma200:
        return "空头排列"
    if ma50 > ma200:
        return "中期多头、短期整理"
    return "均线交织"


@dataclass(frozen=True)
class HoldingFacts:
    """The numbers the health rules read (None where the history is too short)."""

    close: float
    cost: float
    stop: float | None
    exit_status: str
    exit_detail: str
    ma50: float | None
    ma200: float | None
    ret10: float | None
    range60: float | None
    bias200: float | None
    volume3: float | None
    volume60: float | None
    volume20: float | None
    volume_prior60: float | None
    resumed_after: float | None  # weekdays of the suspension it recently came back from
    delisting: float | None  # 1.0 in 退市整理

    @classmethod
    def of(cls, f, cost: float, stop: float | None, exit_info: dict) -> HoldingFacts:
        measured = {name: scalar(getattr(f, name)) for name in _MEASURED}
        return cls(
            cost=cost,
            stop=stop,
            exit_status=exit_info["status"],
            exit_detail=exit_info["detail"],
            **measured,
        )

    @property
    def bear_ma(self) -> bool:
        return bool(self.ma50 and self.ma200 and self.ma50 < self.ma200)


_MEASURED = (
    "close",
    "ma50",
    "ma200",
    "ret10",
    "range60",
    "bias200",
    "volume3",
    "volume60",
    "volume20",
    "volume_prior60",
    "resumed_after",
    "delisting",
)

# A rule returns the fields of its reason text when it fires, else None.
HealthRule = Callable[[HoldingFacts, EngineConfig], dict[str, Any] | None]


def _cost_loss(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.cost and h.close <= h.cost * cfg.danger_loss:
        return {"close": h.close, "cost": h.cost, "limit": 1 - cfg.danger_loss}
    return None


def _stop_loss(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    return {"detail": h.exit_detail} if h.exit_status == "exit" else None


def _bear_structure(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    return {} if h.bear_ma and h.close < h.ma50 else None


def _sharp_drop(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    return {"ret10": h.ret10} if h.ret10 is not None and h.ret10 < cfg.danger_ret10 else None


def _resumed(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.resumed_after and h.resumed_after >= cfg.long_suspension_weekdays:
        return {"days": int(h.resumed_after)}
    return None


def _delisting(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    return {} if h.delisting else None


def _wide_range(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.range60 is not None and h.range60 > cfg.warn_range60:
        return {"range60": h.range60}
    return None


def _distribution(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.bias200 is None or h.bias200 < cfg.distribution_bias200:
        return None
    if h.volume3 and h.volume60 and h.volume3 / h.volume60 <= cfg.distribution_volume_ratio:
        return {"bias200": h.bias200}
    return None


def _near_stop(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.stop and h.stop <= h.close <= h.stop * (1 + cfg.warn_stop_distance):
        return {"stop": h.stop, "distance": cfg.warn_stop_distance}
    return None


def _floating_loss(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    if h.cost and h.cost * cfg.danger_loss < h.close < h.cost * (1 - cfg.warn_loss):
        return {"loss": 1 - h.close / h.cost}
    return None


def _losing_in_downtrend(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    return {} if h.cost and h.close < h.cost and h.bear_ma else None


def _thin_volume(h: HoldingFacts, cfg: EngineConfig) -> dict[str, Any] | None:
    v20, prior = h.volume20, h.volume_prior60
    return {} if v20 and prior and v20 / prior < cfg.warn_volume_ratio else None


DANGER_RULES: dict[str, HealthRule] = {
    "cost_loss": _cost_loss,
    "stop_loss": _stop_loss,
    "bear_structure": _bear_structure,
    "sharp_drop": _sharp_drop,
    "resumed": _resumed,
    "delisting": _delisting,
}
WARNING_RULES: dict[str, HealthRule] = {
    "wide_range": _wide_range,
    "distribution": _distribution,
    "near_stop": _near_stop,
    "floating_loss": _floating_loss,
    "losing_in_downtrend": _losing_in_downtrend,
    "thin_volume": _thin_volume,
}
REASON_TEXT = {
    "cost_loss": "收盘 {close:.2f} 较成本 {cost:.2f} 亏损超过 {limit:.0%}",
    "stop_loss": "触发止损：{detail}",
    "bear_structure": "股价在 MA50 下方且 MA50 低于 MA200（空头结构）",
    "sharp_drop": "近 10 日下跌 {ret10:.1%}",
    "resumed": "停牌约 {days} 个交易日后刚复牌：停牌期间的消息还没反映在价格里，复牌首日可能不设涨跌幅限制",
    "delisting": "退市整理期：即将终止上市，不在可交易池内",
    "wide_range": "60 日振幅 {range60:.0%}，波动过大",
    "distribution": "派发预警：乖离 MA200 {bias200:.0%} 且量能萎缩",
    "near_stop": "距离止损 {stop:.2f} 不到 {distance:.0%}",
    "floating_loss": "浮亏 {loss:.1%}",
    "losing_in_downtrend": "亏损中且 MA50 低于 MA200",
    "thin_volume": "20 日量能不足前 60 日的一半",
    "bull_order": "均线多头排列",
    "trend_channel": "趋势通道：{channel}",
    "trigger": "触发信号：{trigger}",
    "no_risk": "没有风险信号",
}


def fired_rules(
    rules: dict[str, HealthRule], h: HoldingFacts, cfg: EngineConfig
) -> list[tuple[str, dict[str, Any]]]:
    """(key, reason fields) of each rule that fires, in table order."""
    fired = ((key, rule(h, cfg)) for key, rule in rules.items())
    return [(key, fields) for key, fields in fired if fields is not None]


def positive_signs(
    h: HoldingFacts, channels: list[str], triggers: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """Bullish MA order, trend channels and triggers (channel and trigger keys)."""
    bull = h.ma50 and h.ma200 and h.close > h.ma50 > h.ma200
    return (
        ([("bull_order", {})] if bull else [])
        + [
            ("trend_channel", {"channel": CHANNEL_LABELS[c]})
            for c in channels
            if c in TREND_CHANNELS
        ]
        + [("trigger", {"trigger": TRIGGER_LABELS[t]}) for t in triggers]
    )


def holding_health(
    f,
    cfg: EngineConfig,
    cost: float,
    stop: float | None,
    exit_info: dict,
    channels: list[str],
    triggers: list[str],
) -> tuple[str, list[str]]:
    """The verdict and its reasons (display text). `channels` and `triggers` are keys."""
    h = HoldingFacts.of(f, cost, stop, exit_info)
    dangers = fired_rules(DANGER_RULES, h, cfg)
    warnings = fired_rules(WARNING_RULES, h, cfg)
    positives = positive_signs(h, channels, triggers)
    if dangers:
        verdict, reasons = "danger", dangers + warnings
    elif len(warnings) >= 2 or (warnings and not positives):
        verdict, reasons = "caution", warnings + positives
    else:
        verdict, reasons = "healthy", positives + warnings or [("no_risk", {})]
    return verdict, [REASON_TEXT[key].format(**fields) for key, fields in reasons]
