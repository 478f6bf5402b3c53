"""Alert rules evaluated on a panel day: Wyckoff structure (stop, exit, health drop, a new
trigger, the regime turning), plain price, change and volume rules, and a holding's
unrealized loss against its cost (pnl). Pure: the caller
resolves each rule's stocks and remembers what already fired (cooldown, once per day).

Structure kinds compare day t with day t-1 through `diagnose`, computed once per stock and
day however many rules ask; price kinds are one vectorized step over the rule's stocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wyckoff.engine.health import diagnose
from wyckoff.engine.panel import Panel
from wyckoff.engine.regime import market_regime

KINDS = ("stop", "exit", "health-drop", "trigger", "regime", "price", "change", "volume", "pnl")
STRUCTURE_KINDS = ("stop", "exit", "health-drop", "trigger")
NEW_TRIGGERS = ("Spring", "LPS", "SOS", "EVR")  # the trigger labels an alert reports
ALARMING_REGIMES = ("RISK_OFF", "CRASH")
MARKET = "market"  # the code a regime alert is recorded under
# |day change| %, x the 20-day average, loss % below the holding's cost
DEFAULT_THRESHOLDS = {"change": 5.0, "volume": 2.0, "pnl": 10.0}
HEALTH_RANK = {"healthy": 0, "caution": 1, "danger": 2}


@dataclass(frozen=True)
class Rule:
    id: int
    kind: str
    codes: tuple[str, ...]  # the stocks in the rule's scope today
    threshold: float | None = None
    direction: str | None = None  # price: "above" | "below"


@dataclass(frozen=True)
class Hit:
    rule_id: int
    code: str
    name: str
    message: str


@dataclass
class Holding:
    cost: float = 0.0
    own_stop: float | None = None


@dataclass
class AlertDay:
    """One trading day t of a panel, with the per-stock diagnoses rules share."""

    panel: Panel
    t: int
    holdings: dict[str, Holding] = field(default_factory=dict)
    _diagnoses: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    _cache: dict[Any, Any] = field(default_factory=dict)

    def diagnosis(self, code: str, t: int) -> dict[str, Any]:
        key = (code, t)
        if key not in self._diagnoses:
            held = self.holdings.get(code, Holding())
            self._diagnoses[key] = diagnose(
                self.panel, code, cost=held.cost, t=t, own_stop=held.own_stop
            )
        return self._diagnoses[key]

    def name(self, code: str) -> str:
        if code == MARKET:
            return "大盘"
        if "names" not in self._cache:
            self._cache["names"] = self.panel.stocks["name"].astype(str).to_dict()
        return str(self._cache["names"][code])

    def columns(self, codes: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
        """The codes the panel has and their columns, worked out once per scope."""
        key = ("columns", codes)
        if key not in self._cache:
            known = [c for c in codes if self.panel.has(c)]
            self._cache[key] = (known, np.array([self.panel.column(c) for c in known], dtype=int))
        cached: tuple[list[str], np.ndarray] = self._cache[key]
        return cached


def evaluate(day: AlertDay, rules: list[Rule]) -> list[Hit]:
    hits: list[Hit] = []
    for rule in rules:
        if rule.kind == "regime":
            hits += _regime(day, rule)
        elif rule.kind in STRUCTURE_KINDS:
            codes = [c for c in rule.codes if day.panel.has(c)]
            hits += [hit for code in codes if (hit := _structure(day, rule, code))]
        else:
            hits += _prices(day, rule)
    return hits


def _structure(day: AlertDay, rule: Rule, code: str) -> Hit | None:
    today = day.diagnosis(code, day.t)
    if "error" in today:
        return None
    message = None
    if rule.kind == "stop":
        stop = today["stop"]["stop"]
        if stop is not None and today["close"] < stop:
            message = f"收盘 {today['close']:.2f} 跌破止损 {stop:.2f}（{today['stop']['label']}）"
    elif rule.kind == "exit":
        if today["exit"]["status"] == "exit":
            message = f"离场：{today['exit']['detail']}"
    elif rule.kind == "health-drop":
        before = day.diagnosis(code, day.t - 1)
        if "error" not in before and HEALTH_RANK[today["health"]] > HEALTH_RANK[before["health"]]:
            reason = f"：{today['reasons'][0]}" if today["reasons"] else ""
            message = f"健康度 {before['health_label']} → {today['health_label']}{reason}"
    else:
        before = day.diagnosis(code, day.t - 1)
        new = [t for t in today["triggers"] if t in NEW_TRIGGERS]
        new = [t for t in new if t not in before.get("triggers", [])]
        if new:
            message = f"新信号 {'、'.join(new)}（收盘 {today['close']:.2f}）"
    return Hit(rule.id, code, day.name(code), message) if message else None


def _regime(day: AlertDay, rule: Rule) -> list[Hit]:
    today = market_regime(day.panel, day.t)
    before = market_regime(day.panel, day.t - 1)
    if today["regime"] in ALARMING_REGIMES and before["regime"] not in ALARMING_REGIMES:
        message = f"市场状态转为 {today['label']}：{today['reason']}（禁止开新仓）"
        return [Hit(rule.id, MARKET, "大盘", message)]
    return []


def _prices(day: AlertDay, rule: Rule) -> list[Hit]:
    p, t = day.panel, day.t
    codes, columns = day.columns(rule.codes)
    if not codes or t < 1:
        return []
    close, previous = p.close[t, columns], p.close[t - 1, columns]
    if rule.kind == "price":
        level = float(rule.threshold or 0)
        values = close
        fired = close >= level if rule.direction == "above" else close <= level
        words = "站上" if rule.direction == "above" else "跌到"
        text = f"收盘 {{:.2f}} {words} {level:.2f}"
    elif rule.kind == "change":
        limit = rule.threshold or DEFAULT_THRESHOLDS["change"]
        with np.errstate(all="ignore"):
            values = (close / previous - 1) * 100
        fired = np.abs(values) >= limit
        text = f"涨跌 {{:+.2f}}%（阈值 ±{limit:g}%）"
    elif rule.kind == "pnl":
        limit = rule.threshold or DEFAULT_THRESHOLDS["pnl"]
        cost = np.array([day.holdings.get(c, Holding()).cost or np.nan for c in codes])
        values = (close / cost - 1) * 100  # a stock not held has no cost: NaN, never fires
        fired = values <= -limit
        text = f"持仓浮亏 {{:+.2f}}%（按成本价，阈值 -{limit:g}%）"
    else:
        times = rule.threshold or DEFAULT_THRESHOLDS["volume"]
        with np.errstate(all="ignore"):
            average = np.nanmean(p.volume[max(t - 20, 0) : t, columns], axis=0)
            values = p.volume[t, columns] / average
        fired = values >= times
        text = f"成交量是 20 日均量的 {{:.1f}} 倍（阈值 {times:g} 倍）"
    return [
        Hit(rule.id, codes[i], day.name(codes[i]), text.format(values[i]))
        for i in np.flatnonzero(fired & ~np.isnan(values))
    ]
