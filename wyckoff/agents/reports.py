"""AI research reports and strategy decisions (background tools).

The report sends the model compressed features per stock — never raw bars — and asks it to
sort the stocks into 逻辑破产 / 储备营地 / 起跳板 with reasons. The decision computes every
action, stop and share count in code (engine/strategy.py); the model writes only the
rationale. Nothing here changes the portfolio.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from wyckoff import history_store
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.portfolio import Portfolio
from wyckoff.agents.stock_args import StockText
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.config import redact_text
from wyckoff.engine.strategy import PRIORITY, entry_stop, holding_action, size_position
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.history_store import ReportKind

CATEGORIES = ("起跳板", "储备营地", "逻辑破产")
REPORT_PROMPT = """你是严谨的威科夫分析师。下面是若干 A 股的压缩特征（均线位置、近 15 日量价、近 60 日关键事件、信号、市场状态）。
把每只股票分到且只分到一类：
- 起跳板：结构完好、信号已出现，可以准备进攻；
- 储备营地：结构在形成中，继续观察；
- 逻辑破产：结构破坏或风险过高，放弃。
只输出 JSON，不要其它文字：{"stocks": [{"code": "600519", "category": "起跳板", "reason": "不超过 80 字的理由"}]}"""
RATIONALE_PROMPT = """下面是已经由程序计算好的交易指令（动作、股数、止损都不能改）。请为每条指令写一句不超过 60 字的中文理由，
只输出 JSON：{"rationales": {"代码": "理由"}}"""
DEMO_PROMPT = """重要：下面的行情是本地合成的演示数据，不是真实市场数据。每条理由都要以“（演示数据）”开头，
不要把它说成真实股票的真实走势。"""


def system_prompt(base: str, source: str) -> str:
    """The task prompt, told first that the data is synthetic when it is the demo."""
    return f"{DEMO_PROMPT}\n\n{base}" if source == "demo" else base


def _require_provider(context: ToolContext):
    if context.provider is None:
        raise ToolFailure(
            "生成研报需要模型：请在智能体中使用（wyckoff ask / TUI），或先用 `wyckoff model add` 配置模型。"
        )
    return context.provider


def extract_json(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model reply (models sometimes wrap it in prose or fences)."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return None
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def compressed_features(panel, code: str, regime: dict[str, Any]) -> dict[str, Any]:
    """A compact, model-friendly summary of one stock (a few hundred characters)."""
    import numpy as np

    from wyckoff.engine.health import diagnose

    j = panel.column(code)
    close, volume = panel.close[:, j], panel.volume[:, j]
    diagnosis = diagnose(panel, code)
    vol20 = np.nanmean(volume[-21:-1])
    recent = []
    for t in range(len(close) - 15, len(close)):
        pct = close[t] / close[t - 1] - 1
        recent.append(f"{str(panel.dates[t])[5:]} {pct:+.1%} 量比{volume[t] / vol20:.1f}")
    events = []
    mean60 = np.nanmean(volume[-61:-1])
    for t in range(len(close) - 60, len(close)):
        pct = close[t] / close[t - 1] - 1
        ratio = volume[t] / mean60
        if abs(pct) >= 0.05 or ratio >= 2.5:
            events.append(f"{str(panel.dates[t])[5:]} {pct:+.1%} 量比{ratio:.1f}")
    ma = diagnosis["ma"]
    return {
        "code": code,
        "name": panel.stocks.loc[code, "name"],
        "close": diagnosis["close"],
        "ma_position": {
            k: f"{(diagnosis['close'] / v - 1):+.1%}" for k, v in ma.items() if k != "pattern" and v
        },
        "ma_pattern": ma["pattern"],
        "phase": diagnosis["phase"],
        "channels": diagnosis["channels"],
        "triggers": diagnosis["triggers"],
        "health": diagnosis["health_label"],
        "rps120": diagnosis["rps120"],
        "last_15_days": recent,
        "events_60d": events[-8:],
        "regime": regime["regime"],
    }


class ReportParams(BaseModel):
    stock_codes: list[StockText] = Field(
        min_length=1,
        max_length=20,
        description="要研究的股票代码，如 screen_stocks 的 symbols_for_report",
    )


def generate_ai_report(params: ReportParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.regime import market_regime

    provider = _require_provider(context)
    market = MarketData.from_context(context)
    panel = market.panel()
    codes = [market.resolve_code(c) for c in params.stock_codes]
    regime = market_regime(panel)
    context.progress("整理特征", f"{len(codes)} 只", 0.2)
    features = [compressed_features(panel, code, regime) for code in codes if panel.has(code)]
    context.progress("模型分析", provider.name, 0.5)
    reply = provider.chat(
        [{"role": "user", "content": json.dumps(features, ensure_ascii=False)}],
        [],
        system_prompt(REPORT_PROMPT, market.source),
    )
    parsed = extract_json(reply["text"]) or {}
    by_code = {str(s.get("code")): s for s in parsed.get("stocks", []) if isinstance(s, dict)}
    stocks = []
    for feature in features:
        verdict = by_code.get(feature["code"], {})
        category = verdict.get("category") if verdict.get("category") in CATEGORIES else "未分类"
        stocks.append(
            {
                "code": feature["code"],
                "name": feature["name"],
                "category": category,
                "reason": str(verdict.get("reason", "模型没有给出这只股票的结论"))[:200],
            }
        )
    grouped = {
        category: [s["code"] for s in stocks if s["category"] == category]
        for category in (*CATEGORIES, "未分类")
    }
    result = market.envelope(
        panel.as_of,
        regime=regime["regime"],
        categories=grouped,
        stocks=stocks,
        next_step="可调用 generate_strategy_decision 生成攻防决策。",
    )
    _save(context, "ai_report", result)
    return result


def summarize_report(result: dict[str, Any]) -> str:
    groups = [
        f"{category} {len(codes)}" for category, codes in result["categories"].items() if codes
    ]
    return f"{len(result['stocks'])} 只：" + "、".join(groups)


def summarize_decision(result: dict[str, Any]) -> str:
    actions = [order["action"] for order in result["orders"]]
    if not actions:
        return f"没有建议，市场状态 {result['regime']}"
    counts = "、".join(f"{action} {actions.count(action)}" for action in dict.fromkeys(actions))
    return f"{len(actions)} 条建议：{counts}（未执行任何交易）"


class DecisionParams(BaseModel):
    candidate_codes: list[StockText] = Field(
        default_factory=list,
        max_length=20,
        description="候选股；省略则用最近研报的起跳板与储备营地",
    )


def generate_strategy_decision(params: DecisionParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.agents.corporate_actions import positions_in_traded_prices
    from wyckoff.engine.regime import market_regime

    market = MarketData.from_context(context)
    panel = market.panel()
    regime = market_regime(panel)
    book = Portfolio(context.store)
    positions = positions_in_traded_prices(book.store, market.store, panel.as_of)
    cash = book.cash()
    orders: list[dict[str, Any]] = []
    equity = cash
    context.progress("持仓诊断", f"{len(positions)} 只", 0.2)
    for position in positions:
        order, value = _holding_order(panel, position)
        orders.append(order)
        equity += value
    held = {p["code"] for p in positions}
    report_categories = _latest_categories(context)
    springboard = report_categories.get("起跳板", [])
    candidates = [market.resolve_code(c) for c in params.candidate_codes] or (
        springboard + report_categories.get("储备营地", [])
    )
    context.progress("候选与仓位", f"{len(candidates)} 只", 0.5)
    for code in dict.fromkeys(candidates):
        if code in held or not panel.has(code):
            continue
        order = _candidate_order(panel, code, regime, code in springboard, equity, cash)
        if order["action"] != "WAIT":
            cash -= order["amount"] + order["commission"]
        orders.append(order)
    orders.sort(key=lambda o: PRIORITY[o["action"]])
    context.progress("撰写理由", "", 0.8)
    _attach_rationales(context, orders, market.source)
    result = market.envelope(
        panel.as_of,
        regime=regime["regime"],
        buy_allowed=regime["buy_allowed"],
        equity=round(equity, 2),
        orders=orders,
        note="以上是建议，没有执行任何交易。记录到持仓需要调用 update_portfolio，并经用户批准。",
    )
    _save(context, "strategy_decision", result)
    _record_orders(context, market.source, panel.as_of, orders)
    return result


ORDER_ADVICE = {"ATTACK": "buy", "PROBE": "buy", "EXIT": "sell", "TRIM": "sell"}  # HOLD, WAIT: none


def _record_orders(
    context: ToolContext, source: str, as_of: str, orders: list[dict[str, Any]]
) -> None:
    """The decision's buys and sells, each in the scorecard (buys with their stop)."""
    from wyckoff.agents import scorecard
    from wyckoff.scorecard_store import NewItem

    items = [
        NewItem(
            "decision",
            o["code"],
            o["name"],
            as_of,
            ORDER_ADVICE[o["action"]],
            source,
            o["close"],
            o["stop"] if o["action"] in ("ATTACK", "PROBE") else None,
            o["action"],
        )
        for o in orders
        if o["action"] in ORDER_ADVICE
    ]
    scorecard.record(context.store, items)


def _candidate_order(
    panel,
    code: str,
    regime: dict[str, Any],
    springboard: bool,
    equity: float,
    cash: float,
) -> dict[str, Any]:
    """A buy sized by risk (ATTACK for a report's springboard in RISK_ON, else PROBE), or
    WAIT with the reason: suspended today, buying blocked by the regime, or under one lot."""
    from wyckoff.engine.health import stock_features

    name = panel.stocks.loc[code, "name"]
    entry = float(panel.close[-1, panel.column(code)])
    if entry != entry:  # NaN: no bar today
        return _wait(code, name, None, None, "今日停牌，无法买入")
    if not regime["buy_allowed"]:
        return _wait(code, name, round(entry, 2), None, f"市场状态 {regime['regime']} 禁止开新仓")
    kind = "ATTACK" if springboard and regime["regime"] == "RISK_ON" else "PROBE"
    atr14 = float(stock_features(panel, code, len(panel.dates) - 1, DEFAULT_CONFIG).atr14[0])
    stop = entry_stop(entry, atr14)
    sizing = size_position(kind, equity, cash, entry, stop, board=panel.stocks.loc[code, "board"])
    if sizing["shares"] == 0:
        return _wait(code, name, round(entry, 2), stop, f"按{sizing['limited_by']}计算不足一手")
    return {
        "code": code,
        "name": name,
        "close": round(entry, 2),
        "action": kind,
        "stop": stop,
        **sizing,
        "basis": ["研报：起跳板" if kind == "ATTACK" else "候选：观察仓"],
    }


def _wait(code: str, name: str, close: float | None, stop: float | None, basis: str) -> dict:
    return {
        "code": code,
        "name": name,
        "close": close,
        "action": "WAIT",
        "shares": 0,
        "stop": stop,
        "basis": [basis],
    }


def _holding_order(panel, position: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The decision for one holding and its market value. A holding with no bar today
    (suspended) is valued at its last close and held; one missing from the local market is
    valued at cost and held, each with the reason stated."""
    from wyckoff.engine.health import diagnose

    code, shares = position["code"], position["shares"]
    base = {"code": code, "name": position["name"], "shares": 0}  # shares to trade
    if not panel.has(code):
        basis = "本地行情中没有该股，无法诊断，按成本价计入权益；请先 wyckoff data sync"
        order = {**base, "close": None, "action": "HOLD", "stop": position["stop_loss"]}
        return {**order, "basis": [basis]}, shares * position["cost_price"]
    diagnosis = diagnose(panel, code, cost=position["cost_price"], own_stop=position["stop_loss"])
    if "error" in diagnosis:
        bars = panel.stock_frame(code)
        if bars.empty:
            order = {**base, "close": None, "action": "HOLD", "stop": position["stop_loss"]}
            basis = "该股在本地行情中没有任何成交，按成本价计入权益"
            return {**order, "basis": [basis]}, shares * position["cost_price"]
        last_close, last_day = float(bars["close"].iloc[-1]), bars.index[-1].date().isoformat()
        basis = f"停牌中（最后交易日 {last_day}，收盘 {last_close:.2f}），复牌前无法交易"
        order = {**base, "close": round(last_close, 2), "action": "HOLD"}
        return {**order, "stop": position["stop_loss"], "basis": [basis]}, shares * last_close
    action = holding_action(diagnosis, shares)
    order = {
        **base,
        "close": diagnosis["close"],
        **action,
        "health": diagnosis["health_label"],
        "basis": diagnosis["reasons"][:3],
    }
    return order, shares * diagnosis["close"]


def _attach_rationales(context: ToolContext, orders: list[dict[str, Any]], source: str) -> None:
    """The model's one-line rationale per order; the numbers stay as computed."""
    fallback = {o["code"]: "；".join(o.get("basis") or []) for o in orders}
    rationales: dict[str, str] = {}
    if context.provider is not None and orders:
        try:
            reply = context.provider.chat(
                [{"role": "user", "content": json.dumps(orders, ensure_ascii=False)}],
                [],
                system_prompt(RATIONALE_PROMPT, source),
            )
            rationales = (extract_json(reply["text"]) or {}).get("rationales", {}) or {}
        except Exception:  # the rationale is optional; the computed orders stand on their own
            rationales = {}
    for order in orders:
        order["rationale"] = str(rationales.get(order["code"]) or fallback[order["code"]])[:200]


def _latest_categories(context: ToolContext) -> dict[str, list[str]]:
    if context.store is None:
        return {}
    report = history_store.latest_report(context.store, "ai_report")
    return report.get("categories", {}) if report else {}


def _save(context: ToolContext, kind: ReportKind, result: dict[str, Any]) -> None:
    if context.store is None:
        return
    body = redact_text(json.dumps(result, ensure_ascii=False))  # the model's words
    history_store.save_report(context.store, kind, result.get("as_of"), result.get("source"), body)


REPORT_TOOLS = (
    ToolSpec(
        name="generate_ai_report",
        description="AI 深度研报（后台任务）：把股票分为 逻辑破产 / 储备营地 / 起跳板 并给出理由。",
        params=ReportParams,
        func=generate_ai_report,
        title="AI 研报",
        background=True,
        summarize=summarize_report,
        timeout_s=600,
        mcp_tier=3,
    ),
    ToolSpec(
        name="generate_strategy_decision",
        description="攻防决策（后台任务）：对持仓和候选给出 EXIT/TRIM/HOLD/PROBE/ATTACK、股数与止损；只提建议不执行。",
        params=DecisionParams,
        func=generate_strategy_decision,
        title="攻防决策",
        background=True,
        summarize=summarize_decision,
        timeout_s=600,
        mcp_tier=3,
    ),
)
