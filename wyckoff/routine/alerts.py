"""Alert rules over holdings, the watchlist, the whole market or one stock: added and removed
by the user, checked on a trading day (`check`), each alert recorded once per rule, stock and
date and kept quiet for the rule's cooldown (trading days) after it fired.

Read functions for other front ends: `list_rules(store)`, `history(store, date)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import alert_store, watchlist_store
from wyckoff.engine.alerts import KINDS, STRUCTURE_KINDS
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.cli.tools import ToolContext
    from wyckoff.engine.alerts import Hit
    from wyckoff.store import Store

SCOPES = ("holdings", "watchlist", "market")
SCOPE_LABELS = {"holdings": "持仓", "watchlist": "自选股", "market": "全市场"}
MAX_COOLDOWN_DAYS = 250
SELL_KINDS = ("stop", "exit")  # the alerts that advise selling (scored on the scorecard)


def add_rule(store: Store, rule: dict[str, Any]) -> dict[str, Any]:
    """Store one rule `checked_rule` returned; the rule as `list_rules` shows it."""
    with store.transaction():
        rule_id = alert_store.add_rule(
            store,
            rule["kind"],
            rule["scope"],
            rule["threshold"],
            rule["direction"],
            rule["cooldown_days"],
        )
    return next(r for r in list_rules(store) if r["id"] == rule_id)


def checked_rule(
    kind: str,
    scope: str = "holdings",
    threshold: float | None = None,
    above: float | None = None,
    below: float | None = None,
    cooldown_days: int = 0,
) -> dict[str, Any]:
    """The rule the arguments describe, validated, as `describe_rule` reads it (not stored)."""
    if kind not in KINDS:
        raise UsageError(f"没有提醒类型 {kind}：可用 {'、'.join(KINDS)}。")
    if not 0 <= cooldown_days <= MAX_COOLDOWN_DAYS:
        raise UsageError(f"--cooldown 是交易日数，0 到 {MAX_COOLDOWN_DAYS}，收到 {cooldown_days}。")
    direction = None
    if kind == "price":
        if (above is None) == (below is None):
            raise UsageError("price 提醒要给 --above 价格 或 --below 价格（二选一）。")
        direction, threshold = ("above", above) if above is not None else ("below", below)
    if threshold is not None and not threshold > 0:
        raise UsageError(f"阈值必须大于 0，收到 {threshold}。")
    scope = "market" if kind == "regime" else _scope(scope)
    if kind in STRUCTURE_KINDS and scope == "market":
        raise UsageError(f"{kind} 是持仓结构提醒，范围请用 holdings、watchlist 或一只股票。")
    return {
        "kind": kind,
        "scope": scope,
        "threshold": threshold,
        "direction": direction,
        "cooldown_days": cooldown_days,
    }


def _scope(text: str) -> str:
    if text in SCOPES:
        return text
    from wyckoff.agents.portfolio import validate_stock

    return validate_stock(text, None)[0]


def list_rules(store: Store) -> list[dict[str, Any]]:
    return [{**rule, "description": describe_rule(rule)} for rule in alert_store.rules(store)]


def describe_rule(rule: dict[str, Any]) -> str:
    scope = SCOPE_LABELS.get(rule["scope"], rule["scope"])
    condition = {
        "stop": "收盘跌破止损",
        "exit": "出现离场信号",
        "health-drop": "健康度变差（🟢→🟡/🔴）",
        "trigger": "出现新的 Spring/LPS/SOS/EVR",
        "regime": "市场状态转为风险/崩盘",
        "price": f"收盘 {'≥' if rule['direction'] == 'above' else '≤'} {rule['threshold'] or 0:.2f}",
        "change": f"单日涨跌幅 ≥ {rule['threshold'] or 5:g}%",
        "volume": f"成交量 ≥ 20 日均量 {rule['threshold'] or 2:g} 倍",
        "pnl": f"持仓浮亏 ≥ {rule['threshold'] or 10:g}%（按成本价）",
    }[rule["kind"]]
    cooldown = f"，冷却 {rule['cooldown_days']} 个交易日" if rule["cooldown_days"] else ""
    return f"{scope}：{condition}{cooldown}"


def remove_rule(store: Store, rule_id: int) -> None:
    with store.transaction():
        if not alert_store.delete_rule(store, rule_id):
            raise UsageError(f"没有编号 {rule_id} 的提醒规则。用 `wyckoff alert list` 查看。")


def history(store: Store, date: str | None = None, limit: int | None = 100) -> list[dict[str, Any]]:
    return alert_store.events(store, date, limit)


def check(context: ToolContext, date: str | None = None) -> dict[str, Any]:
    """Evaluate every rule on the latest trading day (or the last one up to `date`) and
    record what fired; a second check of the same day records nothing new."""
    from wyckoff.agents.corporate_actions import positions_in_traded_prices
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.past_market import market_on
    from wyckoff.engine.alerts import AlertDay, Holding, Rule, evaluate

    store = context.store
    market: MarketData
    market, panel = market_on(context, date)  # a date before the store's first: one sentence
    rules = alert_store.rules(store)
    held = positions_in_traded_prices(store, market.store, panel.as_of)
    holdings = {p["code"]: Holding(p["cost_price"], p["stop_loss"]) for p in held}
    scopes = {
        "holdings": tuple(holdings),
        "watchlist": tuple(w["code"] for w in watchlist_store.watched(store)),
        "market": tuple(panel.codes),
    }
    day = AlertDay(panel, len(panel.dates) - 1, holdings)
    found = evaluate(
        day,
        [
            Rule(
                r["id"],
                r["kind"],
                scopes.get(r["scope"], (r["scope"],)),
                r["threshold"],
                r["direction"],
            )
            for r in rules
        ],
    )
    hits = _after_cooldown(store, rules, found, [str(d) for d in panel.dates])
    with store.transaction():
        fired = alert_store.record(store, panel.as_of, hits)
    _record_sells(store, market.source, panel.as_of, rules, fired)
    return market.envelope(panel.as_of, fired=fired, rules=len(rules), matched=len(hits))


def _record_sells(
    store: Store, source: str, day: str, rules: list[dict[str, Any]], fired: list[dict[str, Any]]
) -> None:
    """Alerts that advise selling (a broken stop, an exit signal) in the scorecard."""
    from wyckoff.agents import scorecard
    from wyckoff.scorecard_store import NewItem

    kinds = {r["id"]: r["kind"] for r in rules}
    items = [
        NewItem("alert", hit["code"], hit["name"], day, "sell", source, note=hit["message"])
        for hit in fired
        if kinds[hit["rule_id"]] in SELL_KINDS
    ]
    scorecard.record(store, items)


def _after_cooldown(
    store: Store, rules: list[dict[str, Any]], found: list[Hit], dates: list[str]
) -> list[dict[str, Any]]:
    """The hits whose rule did not fire for that stock within its cooldown."""
    cooldown = {r["id"]: r["cooldown_days"] for r in rules}
    last = alert_store.last_fired(store)
    today = len(dates) - 1
    kept = []
    for hit in found:
        previous = last.get((hit.rule_id, hit.code))
        if previous and previous < dates[today]:
            since = today - sum(1 for d in dates if d <= previous) + 1
            if since <= cooldown[hit.rule_id]:
                continue
        kept.append(
            {"rule_id": hit.rule_id, "code": hit.code, "name": hit.name, "message": hit.message}
        )
    return kept
