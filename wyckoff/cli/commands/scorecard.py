"""`wyckoff scorecard`: every piece of advice with its outcome, and `scorecard add` for the
user's own."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wyckoff.cli.commands.market import JsonOption
from wyckoff.cli.numbers import pct, price
from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.errors import UsageError

app = typer.Typer(
    help="建议计分卡 / every piece of advice and how it turned out.",
    rich_markup_mode=None,
)


@app.callback(invoke_without_command=True)
def scorecard(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option("--since", metavar="YYYY-MM-DD", help="只看这天及以后的建议")
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option("--kind", help="只看一类：screen / decision / tail / alert / agent / manual"),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """计分卡：每条建议的 1/5/20 日结果与汇总 / the advice scorecard."""
    if ctx.invoked_subcommand is not None:
        return
    from wyckoff.agents.scorecard import KINDS
    from wyckoff.agents.scorecard_report import refreshed_scorecard
    from wyckoff.config import wyckoff_home
    from wyckoff.store import Store

    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind 只能是 {' / '.join(KINDS)}，收到 {kind}。")
    home = wyckoff_home()
    result = refreshed_scorecard(home, Store.in_home(home), _day(since), kind)
    if json_output:
        print_json(result)
    else:
        show(result)


def _day(text: str | None) -> str | None:
    from datetime import date

    if text is None:
        return None
    try:
        return date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise UsageError(f"--since {text} 不是日期，请写成 2026-12-01 这样。") from None


@app.command("add")
def add(
    stock: Annotated[str, typer.Argument(help="6 位代码或股票名称")],
    advice: Annotated[str, typer.Option("--advice", help="buy / sell / avoid")],
    note: Annotated[str, typer.Option("--note", help="一句话理由")] = "",
) -> None:
    """记下自己的判断（以本地行情最新交易日为准）/ record your own advice."""
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.scorecard import ADVICE, ADVICE_LABELS, record_latest
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.store import Store

    if advice not in ADVICE:
        raise UsageError(f"--advice 只能是 {' / '.join(ADVICE)}，收到 {advice}。")
    home = wyckoff_home()
    market = MarketData(home, load_config(home))
    item = record_latest(Store.in_home(home), market, "manual", stock, advice, note.strip())
    demo = "（演示行情）" if item["source"] == "demo" else ""
    state = "已记入计分卡" if item["recorded"] else "计分卡里已有同一天的这条判断，未重复记录"
    print_notice(
        f"{state}{demo}：{item['code']} {item['name']} {ADVICE_LABELS[advice]}，"
        f"截至 {item['as_of']}（收盘 {price(item['price'])}），次日开盘起计结果。"
    )


def show(result: dict[str, Any]) -> None:
    from wyckoff.agents.scorecard import ADVICE_LABELS, KIND_LABELS

    items = result["items"]
    if not items:
        typer.echo(
            "计分卡还是空的：运行 wyckoff screen、尾盘检查，或 wyckoff scorecard add 记下判断。"
        )
        return
    rows = [
        [
            item["id"],
            KIND_LABELS[item["kind"]] + ("（演示）" if item["demo"] else ""),
            f"{item['code']} {item['name'] or ''}",
            item["as_of"],
            ADVICE_LABELS[item["advice"]],
            item["entry_date"] or "待定",
            price(item["entry_price"]),
            *(_score(item, h) for h in ("1", "5", "20")),
            _response(item),
        ]
        for item in items
    ]
    columns = [
        "编号",
        "类型",
        "股票",
        "建议日",
        "建议",
        "次日",
        "开盘",
        "1日",
        "5日",
        "20日",
        "我的操作",
    ]
    print_table("建议计分卡（超额 = 相对全市场等权，卖出/回避记为避免的损失）", columns, rows)
    _summary("汇总（真实行情）", result["summary"])
    if result["demo_summary"]:
        _summary("演示行情（合成数据，不计入上面的汇总）", result["demo_summary"])


def _score(item: dict[str, Any], horizon: str) -> str:
    if item["unfillable"]:
        return item["unfillable"] if horizon == "1" else "—"
    from wyckoff.agents.scorecard_report import percent

    return pct(percent(item["outcomes"][horizon]["score"]), signed=True)


def _response(item: dict[str, Any]) -> str:
    from wyckoff.agents.scorecard_report import RESPONSE_LABELS

    return RESPONSE_LABELS.get(item["response"] or "", "—")


def _summary(title: str, summary: dict[str, dict[str, Any]]) -> None:
    from wyckoff.agents.scorecard import KIND_LABELS
    from wyckoff.agents.scorecard_report import summary_line

    typer.echo(title)
    if not summary:
        typer.echo("  （没有建议）")
    for kind, s in summary.items():
        typer.echo(f"  {KIND_LABELS[kind]}：{summary_line(s)}")
