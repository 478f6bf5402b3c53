"""`wyckoff portfolio ...`: the user's positions and cash, changed only by explicit commands."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import local_time, local_today, print_json, print_notice, print_table
from wyckoff.store import Store

app = typer.Typer(
    help="持仓 / portfolio: list, check, add, rm, cash, history, undo.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _book():
    from wyckoff.agents.portfolio import Portfolio
    from wyckoff.config import wyckoff_home

    return Portfolio(Store.in_home(wyckoff_home()))


def _done(change: dict) -> None:
    from wyckoff.agents.portfolio import describe_change

    print_notice(describe_change(change))


@app.command("list")
def list_positions(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """列出持仓与现金 / positions and cash."""
    from wyckoff.agents.portfolio import price_text

    book = _book()
    positions, cash = book.positions(), book.cash()
    if json_output:
        print_json({"positions": positions, "cash": cash})
        return
    if not positions:
        print_notice(
            "持仓为空。用 `wyckoff portfolio add CODE --name 名称 --shares 100 --cost 10.5 --buy-dt 20260105` 添加。"
        )
    else:
        print_table(
            "持仓",
            ["代码", "名称", "股数", "成本价", "买入日", "止损"],
            [
                [
                    p["code"],
                    p["name"],
                    p["shares"],
                    price_text(p["cost_price"]),
                    p["buy_dt"],
                    price_text(p["stop_loss"]) if p["stop_loss"] else "-",
                ]
                for p in positions
            ],
        )
    typer.echo(f"现金：{cash:,.2f}")


@app.command("check")
def check(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """持仓诊断（不需要模型）：健康度、理由、止损、离场状态 / diagnose every holding."""
    from wyckoff.agents.portfolio import PortfolioParams, portfolio_tool, price_text
    from wyckoff.cli.commands.market import _call as run_tool
    from wyckoff.cli.commands.market import _note as show_data_note

    result = run_tool(portfolio_tool, PortfolioParams(mode="diagnose"), label="持仓诊断")
    if json_output:
        print_json(result)
        return
    if not result["positions"]:
        print_notice(
            "持仓为空，没有可诊断的。用 `wyckoff portfolio add CODE --shares 100 --cost 10.5` 添加。"
        )
        return
    show_data_note(result)
    for p in result["positions"]:
        if p["health"] == "unknown":
            typer.echo(f"{p['code']} {p['name']}：{p['reasons'][0]}")
            continue
        stop = price_text(p["stop_level"]) if p["stop_level"] else "—"
        typer.echo(
            f"{p['health_label']}  {p['code']} {p['name']}  {p['shares']} 股  "
            f"收盘 {price_text(p['close'])}  盈亏 {p['pnl_pct']:+.2f}%  "
            f"止损 {stop}（{p['stop_label']}）  {p['exit_status']['detail']}"
        )
        typer.echo("".join(f"  · {reason}\n" for reason in p["reasons"]).rstrip("\n"))
    typer.echo(f"现金 {result['cash']:,.2f}  总资产 {result['equity']:,.2f}")


@app.command("add")
def add(
    code: Annotated[str, typer.Argument(help="6 位代码或股票名称")],
    name: Annotated[str | None, typer.Option("--name", help="股票名称（须与代码一致）")] = None,
    shares: Annotated[int, typer.Option("--shares", help="股数，100 的整数倍")] = 100,
    cost: Annotated[float, typer.Option("--cost", help="成本价")] = 0.0,
    buy_dt: Annotated[
        str | None, typer.Option("--buy-dt", help="买入日期 YYYYMMDD，默认今天")
    ] = None,
    stop_loss: Annotated[float | None, typer.Option("--stop-loss")] = None,
) -> None:
    """添加持仓（已有则加仓并摊薄成本）/ add a position."""
    _done(
        _book().add(code, name, shares, cost, buy_dt or local_today().strftime("%Y%m%d"), stop_loss)
    )


@app.command("rm")
def remove(code: Annotated[str, typer.Argument(help="6 位代码或股票名称")]) -> None:
    """删除持仓 / remove a position."""
    _done(_book().remove(code))


@app.command("cash", context_settings={"ignore_unknown_options": True})  # -1 is a number
def cash(amount: Annotated[float, typer.Argument(help="可用现金")]) -> None:
    """设置可用现金 / set free cash."""
    _done(_book().set_cash(amount))


@app.command("history")
def history(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """持仓改动记录（谁、何时、改了什么）/ change history."""
    rows = _book().history()
    if json_output:
        print_json({"history": rows})
        return
    from wyckoff.agents.portfolio import ACTION_LABELS, ACTOR_LABELS, describe_state

    print_table(
        "持仓改动",
        ["时间", "来源", "操作", "改动前", "改动后"],
        [
            [
                local_time(r["ts"]),
                ACTOR_LABELS.get(r["actor"], r["actor"]),
                ACTION_LABELS.get(r["action"], r["action"]),
                describe_state(r["before"]),
                describe_state(r["after"]),
            ]
            for r in rows
        ],
    )


@app.command("undo")
def undo() -> None:
    """撤销最近一次改动 / undo the newest change."""
    _done(_book().undo())
