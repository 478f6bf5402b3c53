"""`wyckoff tail`: the tail-session check from the command line, and its record."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wyckoff.cli.commands.market import JsonOption, _call, _note, _params
from wyckoff.cli.numbers import price
from wyckoff.cli.output import print_json, print_table

app = typer.Typer(
    help="尾盘二次确认（14:30 后）与历史记录 / the tail-session check and its record.",
    rich_markup_mode=None,
)


@app.callback(invoke_without_command=True)
def tail(
    ctx: typer.Context,
    codes: Annotated[
        list[str] | None,
        typer.Option(
            "--codes",
            metavar="CODES",
            help="要检查的股票（代码或名称，可逗号分隔或重复）；默认持仓、自选股和待确认信号",
        ),
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", metavar="HH:MM", help="回看今天的某个时刻，如 9:31、14:45")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="不在尾盘时段也检查")] = False,
    push: Annotated[
        str | None, typer.Option("--push", metavar="NAME", help="把结论推送到通知渠道 NAME，或 all")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """尾盘检查：可买 / 观察 / 放弃（持仓破位预警） / check holdings and signals after 14:30."""
    if ctx.invoked_subcommand is not None:
        return
    from wyckoff.agents.intraday import TailParams, tail_check
    from wyckoff.cli.commands.notify import push_targets

    targets = push_targets(push, "尾盘检查结果只记录不推送") if push else []
    wanted = [c.strip() for text in codes or [] for c in text.split(",") if c.strip()]
    params = _params(TailParams, codes=wanted, at=at, force=force)
    result = _call(tail_check, params, label="尾盘检查")
    if json_output:
        print_json(result)
    else:
        _show(result)
    if targets:
        _push(result, targets)


def _show(result: dict[str, Any]) -> None:
    _note(result)
    typer.echo(f"尾盘检查 {result['checked_at']}（{result['phase']}）")
    if result.get("playbook"):
        typer.echo(f"按你的剧本：「{result['playbook']['quote']}」")
    for row in result["results"]:
        typer.echo(_verdict_lines(row))


def _push(result: dict[str, Any], targets: list) -> None:
    """The verdicts in a short message; exit 1 when a channel failed (the others still got it)."""
    from wyckoff.cli.commands.notify import report_push
    from wyckoff.routine.tail_digest import tail_message

    if report_push(targets, *tail_message(result)):
        raise typer.Exit(1)


def _verdict_lines(row: dict[str, Any]) -> str:
    from wyckoff.agents.signal_record import record_lines
    from wyckoff.routine.tail_digest import VERDICT_MARKS

    head = f"\n{VERDICT_MARKS.get(row['verdict'], '')} {row['verdict']}  {row['code']} {row.get('name', '')}（{row['role']}）"
    if row.get("price") is not None:
        minutes = row["minutes"]
        head += f"  现价 {row['price']:.2f}  VWAP {row['facts']['vwap']:.2f}  分钟线 {minutes['source']} 截至 {minutes['as_of']}"
    lines = [head, *[f"  · {reason}" for reason in row["reasons"]]]
    lines += [f"  ? 未检查：{item}" for item in row.get("unchecked") or []]
    lines += [f"  · 历史记录 {line}" for line in record_lines(row.get("signal_records") or [])]
    return "\n".join(lines)


@app.command("history")
def history(
    code: Annotated[str | None, typer.Option("--code", metavar="CODE", help="只看这只股票")] = None,
    limit: Annotated[int, typer.Option("--limit", help="最多显示几条")] = 30,
    json_output: JsonOption = False,
) -> None:
    """尾盘检查记录与次日表现 / recorded verdicts with the next day's open and close."""
    from wyckoff.agents.intraday import TailHistoryParams, query_tail_buy

    result = _call(query_tail_buy, _params(TailHistoryParams, code=code, limit=limit))
    if json_output:
        print_json(result)
        return
    if not result["checks"]:
        typer.echo("还没有尾盘检查记录：14:30 后运行 `wyckoff tail`。")
        return
    print_table(
        "尾盘检查记录（次日 = 下一个交易日相对检查价）",
        ["日期", "时刻", "股票", "结论", "检查价", "次日开盘", "次日收盘"],
        [
            [
                r["day"],
                r["checked_at"][11:],
                f"{r['code']} {r['name'] or ''}",
                r["verdict"],
                price(r["price"]),
                _pct(r["next_open_pct"]),
                _pct(r["next_close_pct"]),
            ]
            for r in result["checks"]
        ],
    )
    for verdict, stats in result["by_verdict"].items():
        mean = stats["mean_next_close_pct"]
        known = (
            f"，次日收盘平均 {mean:+.2f}%（{stats['known']} 条已知）" if mean is not None else ""
        )
        typer.echo(f"{verdict}：{stats['count']} 次{known}")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"
