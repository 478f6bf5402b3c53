"""`wyckoff portfolio ...`: the user's positions and cash, changed only by explicit commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from wyckoff.cli.output import local_time, local_today, print_json, print_notice, print_table
from wyckoff.store import Store

if TYPE_CHECKING:
    from wyckoff.ledger.fees import Side

app = typer.Typer(
    help=(
        "持仓 / portfolio: list, check, add, rm, cash, buy, sell, show, nav, import, history, undo."
    ),
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
def list_positions(
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出持仓与现金 / positions and cash."""
    from wyckoff.agents.portfolio import price_text
    from wyckoff.ledger.days import day_text

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
                    day_text(p["buy_dt"]),
                    price_text(p["stop_loss"]) if p["stop_loss"] else "-",
                ]
                for p in positions
            ],
        )
    typer.echo(f"现金：{cash:,.2f}")


@app.command("check")
def check(json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False) -> None:
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
    shares: Annotated[int, typer.Option("--shares", help="持有的股数（零股也可以）")] = 100,
    cost: Annotated[float, typer.Option("--cost", help="成本价")] = 0.0,
    buy_dt: Annotated[
        str | None, typer.Option("--buy-dt", help="买入日期 YYYYMMDD，默认今天")
    ] = None,
    stop_loss: Annotated[float | None, typer.Option("--stop-loss", help="止损价（元）")] = None,
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
def cash(
    amount: Annotated[float, typer.Argument(metavar="AMOUNT", help="可用现金")],
    day: Annotated[
        str | None, typer.Option("--date", help="资金转入/转出的日期 YYYYMMDD，默认今天")
    ] = None,
) -> None:
    """设置可用现金（差额记为当天的资金转入/转出）/ set free cash."""
    _done(_book().set_cash(amount, day=day))


@app.command("history")
def history(json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False) -> None:
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


# --- the ledger: fills with fees -------------------------------------------------------------

StockArg = Annotated[str, typer.Argument(metavar="STOCK", help="6 位代码或股票名称")]
SharesArg = Annotated[int, typer.Argument(metavar="SHARES", help="成交股数")]
PriceArg = Annotated[str, typer.Argument(metavar="PRICE", help="成交价（元，最多 3 位小数）")]
DateOpt = Annotated[
    str | None,
    typer.Option("--date", help="成交日期 YYYYMMDD，默认最近一个已开盘的交易日（北京时间）"),
]
TimeOpt = Annotated[str | None, typer.Option("--time", help="成交时间 HH:MM")]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="行情库没有当天日线（停牌或未同步）时仍记录，价格不核对")
]


def _ledger():
    from wyckoff.agents.ledger import Ledger, broker_fees
    from wyckoff.agents.ledger_report import open_market
    from wyckoff.config import load_config, wyckoff_home

    config = load_config()
    market, _ = open_market(wyckoff_home(), config, build=False)
    return Ledger(Store.in_home(wyckoff_home()), broker_fees(config), market)


def _today() -> str:
    return local_today().strftime("%Y%m%d")


def _fill_command(side: Side) -> Callable[..., None]:
    """The `buy` or `sell` command: one fill of `side` recorded and shown with its fees."""
    from wyckoff.agents.ledger import describe_fill

    def record(
        stock: StockArg,
        shares: SharesArg,
        price: PriceArg,
        day: DateOpt = None,
        at: TimeOpt = None,
        force: ForceOpt = False,
    ) -> None:
        change = _ledger().record(side, stock, shares, price, day, at, force=force)
        print_notice(describe_fill(change))

    return record


app.command("buy", help="记录一笔买入（按券商费率扣佣金、过户费）/ record a buy fill.")(
    _fill_command("buy")
)
app.command("sell", help="记录一笔卖出（T+1；扣佣金、印花税、过户费）/ record a sell fill.")(
    _fill_command("sell")
)


def _market():
    """The market store with the held stocks' ex-dates applied (said), or None and why."""
    from wyckoff.agents.corporate_actions import catch_up, describe_action
    from wyckoff.agents.ledger_report import open_market
    from wyckoff.config import load_config, wyckoff_home

    market, missing = open_market(wyckoff_home(), load_config())
    if market is not None:
        for action in catch_up(_book().store, market):
            print_notice(describe_action(action))
    return market, missing


@app.command("show")
def show(json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False) -> None:
    """持仓盈亏：按最新收盘价的浮动盈亏与已实现盈亏 / positions with P&L."""
    from wyckoff.agents.ledger_report import profit_and_loss
    from wyckoff.agents.portfolio import price_text
    from wyckoff.ledger.days import day_text
    from wyckoff.ledger.money import yuan

    market, missing = _market()
    report = profit_and_loss(_book().store, market)
    if json_output:
        print_json({**report, "note": missing})
        return

    def money(cents: int | None) -> str:
        return "-" if cents is None else yuan(cents)

    rows = [
        [
            r["code"],
            r["name"],
            r["shares"],
            price_text(r["cost_cents"] / r["shares"] / 100),
            "-" if r["close"] is None else f"{r['close']:.2f}（{day_text(r['close_date'])}）",
            money(r["value_cents"]),
            money(r["unrealized_cents"]),
            money(r["realized_cents"]),
        ]
        for r in report["positions"]
    ]
    rows += [
        [r["code"], r["name"], "已清仓", "", "", "", "", money(r["realized_cents"])]
        for r in report["closed"]
    ]
    print_table(
        "持仓盈亏",
        ["代码", "名称", "股数", "成本价", "收盘价", "市值", "浮动盈亏", "已实现盈亏"],
        rows,
    )
    typer.echo(
        f"现金 {yuan(report['cash_cents'])}，市值 {yuan(report['value_cents'])}，"
        f"总资产 {yuan(report['equity_cents'])}；浮动盈亏 {yuan(report['unrealized_cents'])}，"
        f"已实现盈亏 {yuan(report['realized_cents'])}"
    )
    if missing or report["unpriced"]:
        print_notice(
            missing
            or f"本地行情库没有 {'、'.join(report['unpriced'])} 的收盘价，未计入市值和浮动盈亏。"
        )


@app.command("nav")
def nav(
    chart: Annotated[bool, typer.Option("--chart", help="画出净值与沪深300的走势")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """每日净值：按每天收盘价估值，旁边是同期沪深300 / daily NAV beside the CSI 300."""
    from wyckoff.agents.ledger_nav import daily_nav
    from wyckoff.errors import UsageError
    from wyckoff.ledger.chart import line_chart
    from wyckoff.ledger.days import day_text
    from wyckoff.ledger.money import yuan

    market, missing = _market()
    if market is None:
        raise UsageError(f"{missing}（每日净值要用每天的收盘价。）")
    report = daily_nav(_book().store, market)
    if json_output:
        print_json(report)
        return
    days = report["days"]
    if chart and days:
        typer.echo(
            line_chart(
                {
                    "账户": [d["return_pct"] for d in days],
                    "沪深300": [d["csi300_pct"] for d in days],
                }
            )
        )
    elif days:
        print_table(
            "每日净值",
            ["日期", "总资产", "现金", "累计收益", "沪深300"],
            [
                [
                    day_text(d["date"]),
                    yuan(d["nav_cents"]),
                    yuan(d["cash_cents"]),
                    _pct(d["return_pct"]),
                    _pct(d["csi300_pct"]),
                ]
                for d in days
            ],
        )
    if report["note"]:
        print_notice(report["note"])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


@app.command("import")
def import_file(
    file: Annotated[str, typer.Argument(help="券商导出的持仓或交割单（CSV/TXT/XLS 文本）")],
    broker: Annotated[
        str,
        typer.Option("--broker", help="ths（同花顺）、eastmoney（东方财富）、tdx（通达信）或 auto"),
    ] = "auto",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="只预览改动，不写入")] = False,
    keep_duplicates: Annotated[
        bool,
        typer.Option(
            "--keep-duplicates", help="交割单里完全相同的几行确是几笔成交时，全部导入（默认跳过）"
        ),
    ] = False,
) -> None:
    """导入券商持仓或交割单（先列出改动；已导入过的成交不重复记；可 undo）/ import a broker export."""
    from pathlib import Path

    from wyckoff.agents.broker_import import all_imported_before, describe_import, import_export
    from wyckoff.errors import UsageError
    from wyckoff.ledger.broker_export import BROKER_NAMES, read_export

    if broker not in (*BROKER_NAMES, "auto"):
        raise UsageError(f"不认识券商 {broker}：可用 ths、eastmoney、tdx 或 auto。")
    name = Path(file).name
    export = read_export(Path(file).expanduser(), broker)
    try:
        result = import_export(_ledger(), export, _today(), dry_run, keep_duplicates)
    except UsageError as exc:
        raise UsageError(f"{name} {exc.message}（没有导入任何内容）") from None
    sentence = all_imported_before(result, export, name)
    if sentence:
        print_notice(sentence)
        return
    for line in describe_import(result, export, name):
        typer.echo(line)
    print_notice(_import_outcome(result, dry_run))


def _import_outcome(result: dict, dry_run: bool) -> str:
    if dry_run:
        return "以上是预览，没有写入（去掉 --dry-run 即导入）。"
    if result["kind"] == "deliveries" and not result["booked"]:
        return "没有记录任何成交。"
    return "已导入；`wyckoff portfolio undo` 可整体撤销这次导入。"
