"""`wyckoff alert ...`: alert rules on Wyckoff structure and on prices, checked per trading day."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.store import Store

app = typer.Typer(
    help="提醒 / alerts: add, list, rm, check, history.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
JsonOption = Annotated[bool, typer.Option("--json", help="输出 JSON")]


def _store() -> Store:
    from wyckoff.config import wyckoff_home

    return Store.in_home(wyckoff_home())


@app.command("add", context_settings={"ignore_unknown_options": True})
def add(
    kind: Annotated[
        str,
        typer.Argument(
            help="stop | exit | health-drop | trigger | regime | price | change | volume | pnl"
        ),
    ],
    scope: Annotated[
        str, typer.Option("--scope", help="holdings | watchlist | market | 股票代码或名称")
    ] = "holdings",
    cooldown: Annotated[int, typer.Option("--cooldown", help="触发后静默的交易日数")] = 0,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", help="change：涨跌幅 %；volume：均量倍数；pnl：浮亏 %"),
    ] = None,
    above: Annotated[float | None, typer.Option("--above", help="price：收盘不低于")] = None,
    below: Annotated[float | None, typer.Option("--below", help="price：收盘不高于")] = None,
) -> None:
    """添加提醒规则 / add an alert rule."""
    from wyckoff.routine.alerts import add_rule, checked_rule

    rule = add_rule(_store(), checked_rule(kind, scope, threshold, above, below, cooldown))
    print_notice(f"已添加提醒 #{rule['id']} {rule['kind']}：{rule['description']}")


@app.command("list")
def list_rules(json_output: JsonOption = False) -> None:
    """列出提醒规则 / list the rules."""
    from wyckoff.routine.alerts import list_rules as rules_of

    rules = rules_of(_store())
    if json_output:
        print_json({"rules": rules})
        return
    if not rules:
        print_notice("还没有提醒规则。用 `wyckoff alert add stop --scope holdings` 添加。")
        return
    print_table(
        "提醒规则",
        ["编号", "类型", "说明"],
        [[r["id"], r["kind"], r["description"]] for r in rules],
    )


@app.command("rm")
def remove(
    rule_id: Annotated[int, typer.Argument(metavar="ID", help="规则编号（见 alert list）")],
) -> None:
    """删除提醒规则 / remove a rule."""
    from wyckoff.routine.alerts import remove_rule

    remove_rule(_store(), rule_id)
    print_notice(f"已删除提醒 #{rule_id}。")


@app.command("check")
def check(
    date: Annotated[
        str | None, typer.Option("--date", help="按这个交易日检查 YYYY-MM-DD（默认最新）")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """按最新交易日检查所有提醒（同一天重复检查不会重复提醒）/ check every rule."""
    from wyckoff.cli.commands.market import _call as run_tool
    from wyckoff.cli.commands.market import _note as show_data_note
    from wyckoff.routine.alerts import check as check_rules
    from wyckoff.routine.brief import normalize_date

    day = normalize_date(date) if date else None
    result = run_tool(lambda _params, context: check_rules(context, day), None, label="检查提醒")
    if json_output:
        print_json(result)
        return
    show_data_note(result)
    fired = result["fired"]
    if not fired:
        typer.echo(f"{result['as_of']}：{result['rules']} 条规则，没有新的提醒。")
        return
    typer.echo(f"{result['as_of']}：新提醒 {len(fired)} 条")
    for hit in fired:
        typer.echo(f"  #{hit['rule_id']} {hit['code']} {hit['name']}：{hit['message']}")


@app.command("history")
def history(
    date: Annotated[str | None, typer.Option("--date", help="只看这个交易日")] = None,
    json_output: JsonOption = False,
) -> None:
    """已触发的提醒 / alerts fired so far."""
    from wyckoff.routine.alerts import history as fired
    from wyckoff.routine.brief import normalize_date

    day = normalize_date(date) if date else None
    events = fired(_store(), day, limit=None if day else 100)  # one day: every alert of it
    if json_output:
        print_json({"alerts": events})
        return
    if not events:
        print_notice("还没有触发过提醒。")
        return
    print_table(
        "已触发的提醒",
        ["日期", "规则", "代码", "名称", "内容"],
        [
            [e["date"], f"#{e['rule_id']} {e['kind']}", e["code"], e["name"], e["message"]]
            for e in events
        ],
    )
