"""The daily routine in the reading room: alert rules and what fired, the watchlist, the
approvals scheduled runs left, and the saved HTML briefs. Reading calls the same functions as
`wyckoff alert`, `watch`, `approvals` and `brief`; every change is a Plan the user confirms
before it is made (the Desk's plan → execute)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from wyckoff.cli.tools import ToolContext
from wyckoff.errors import UsageError
from wyckoff.web.desk import Plan

BRIEF_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}$")
WATCH_FORM_LABELS = {"code": "代码或名称", "tags": "标签", "note": "备注"}  # app.js `watchPage`


# --- alerts ------------------------------------------------------------------------------------


def alerts(context: ToolContext) -> dict[str, Any]:
    """The rules, the alerts fired on the newest checked day, and the history."""
    from wyckoff.routine.alerts import history, list_rules

    fired = history(context.store)
    newest = fired[0]["date"] if fired else None
    return {
        "rules": list_rules(context.store),
        "today": [e for e in fired if e["date"] == newest],
        "history": fired,
    }


# --- scorecard ---------------------------------------------------------------------------------


def scorecard(context: ToolContext) -> dict[str, Any]:
    """Every piece of advice with its outcomes, newest first, and each kind's summary as a
    line (the real markets' and the demo market's apart)."""
    from wyckoff.agents.scorecard import ADVICE_LABELS, KIND_LABELS
    from wyckoff.agents.scorecard_report import RESPONSE_LABELS, refreshed_scorecard, summary_line

    card = refreshed_scorecard(context.home, context.store)

    def lines(summary: dict[str, Any]) -> list[dict[str, str]]:
        return [{"kind": KIND_LABELS[k], "line": summary_line(s)} for k, s in summary.items()]

    items = [
        {
            **item,
            "kind_label": KIND_LABELS[item["kind"]],
            "advice_label": ADVICE_LABELS[item["advice"]],
            "response_label": RESPONSE_LABELS.get(item["response"] or "", "—"),
        }
        for item in reversed(card["items"])
    ]
    return {
        "items": items,
        "summary": lines(card["summary"]),
        "demo_summary": lines(card["demo_summary"]),
    }


def alert_plan(context: ToolContext, form: dict[str, Any]) -> Plan:
    """Add a rule (validated now, as `alert add` would) or remove one by its number."""
    from wyckoff.routine.alerts import add_rule, checked_rule, describe_rule, remove_rule

    store = context.store
    if form.get("action") == "remove":
        rule_id = _number(form.get("id"), "提醒编号")
        rule = _rule(context, rule_id)

        def remove() -> str:
            remove_rule(store, rule_id)
            return f"已删除提醒 #{rule_id}。"

        return Plan(f"删除提醒 #{rule_id} {rule['kind']}：{rule['description']}", remove)
    rule = checked_rule(
        kind=str(form.get("kind") or ""),
        scope=str(form.get("scope") or "holdings"),
        threshold=_price(form.get("threshold"), "阈值"),
        above=_price(form.get("above"), "价格上限"),
        below=_price(form.get("below"), "价格下限"),
        cooldown_days=_number(form.get("cooldown") or 0, "冷却天数"),
    )

    def add() -> str:
        added = add_rule(store, rule)
        return f"已添加提醒 #{added['id']} {added['kind']}：{added['description']}"

    return Plan(f"添加提醒 {rule['kind']}：{describe_rule(rule)}", add)


def _rule(context: ToolContext, rule_id: int) -> dict[str, Any]:
    from wyckoff.routine.alerts import list_rules

    for rule in list_rules(context.store):
        if rule["id"] == rule_id:
            return rule
    raise UsageError(f"没有编号 {rule_id} 的提醒规则：刷新页面看现有的规则。")


# --- watchlist ---------------------------------------------------------------------------------


def watchlist(context: ToolContext) -> dict[str, Any]:
    from wyckoff.routine.watchlist import Watchlist

    return {"watchlist": Watchlist(context.store).items()}


def watch_plan(context: ToolContext, form: dict[str, Any]) -> Plan:
    """Watch a stock or stop watching it; the stock is found by the one resolver now, and
    the sentence is the agent's update_watchlist approval sentence."""
    from pydantic import ValidationError

    from wyckoff.agents.portfolio import validate_stock
    from wyckoff.cli.usage_errors import form_problem
    from wyckoff.routine.watchlist import (
        UpdateWatchlistParams,
        Watchlist,
        describe_change,
        describe_update,
    )

    try:
        params = UpdateWatchlistParams.model_validate(
            {
                "action": form.get("action"),
                "code": str(form.get("code") or ""),
                "tags": [t for t in str(form.get("tags") or "").replace("，", ",").split(",") if t],
                "note": form.get("note") or None,
            }
        )
    except ValidationError as exc:
        raise UsageError(f"{form_problem(exc, WATCH_FORM_LABELS)}。请改好后再试。") from None
    book = Watchlist(context.store)
    if params.action == "add":
        code = validate_stock(params.code, None)[0]
        change = lambda: book.add(code, params.tags, params.note, actor="web")  # noqa: E731
    else:
        code = book.watched_code(params.code)
        change = lambda: book.remove(code, actor="web")  # noqa: E731
    return Plan(describe_update(params, context), lambda: describe_change(change()))


# --- approvals ---------------------------------------------------------------------------------


def approvals(context: ToolContext) -> dict[str, Any]:
    from wyckoff.routine.approvals import STATUS_LABELS, history, pending

    waiting = pending(context.store)
    done = [a for a in history(context.store) if a["status"] != "pending"][:20]
    for item in done:
        item["status_label"] = STATUS_LABELS.get(item["status"], item["status"])
    return {"pending": waiting, "done": done}


def approval_plan(context: ToolContext, form: dict[str, Any]) -> Plan:
    """Approve (run the queued call once) or reject a pending approval, as `wyckoff
    approvals approve|reject` does."""
    from wyckoff.routine.approvals import approve, pending, reject

    approval_id = _number(form.get("id"), "编号")
    item = next((a for a in pending(context.store) if a["id"] == approval_id), None)
    if item is None:
        raise UsageError(f"#{approval_id} 不是待批准的操作（可能已处理或已过期）：请刷新页面。")
    if form.get("decision") == "reject":

        def rejected() -> str:
            reject(context.store, approval_id)
            return f"已拒绝 #{approval_id}：{item['description']}（没有执行）"

        return Plan(f"拒绝 #{approval_id}：{item['description']}（不执行）", rejected)

    def approved() -> str:
        done = approve(context, approval_id)
        if done["status"] == "applied":
            return f"已批准并执行 #{approval_id}：{done['result']}"
        return (
            f"#{approval_id} 没有执行（{done['result'].rstrip('。')}），仍在待批准中："
            "处理好后可以再批准，或者拒绝。"
        )

    return Plan(f"批准并执行一次 #{approval_id}：{item['description']}", approved)


# --- briefs ------------------------------------------------------------------------------------


def brief_file(home: Path, name: str) -> Path:
    """The saved HTML brief of the trading day `name` (YYYY-MM-DD), nothing else."""
    from wyckoff.routine.brief import briefs_dir

    path = briefs_dir(home) / f"{name}.html"
    if not BRIEF_NAME.match(name) or not path.is_file():
        raise FileNotFoundError(name)
    return path


def _number(value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what}应该是整数，收到的是 {value!r}。") from None


def _price(value: Any, what: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what}应该是数字，收到的是 {value!r}。") from None
