"""`wyckoff paper run|show|nav|reset`: the paper account that follows the default strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from wyckoff import paper_store
from wyckoff.cli.commands.market import JsonOption
from wyckoff.cli.output import is_interactive, print_json, print_notice, print_table
from wyckoff.store import Store

if TYPE_CHECKING:
    from wyckoff.agents.market_data import MarketData
    from wyckoff.engine.market_store import MarketStore

app = typer.Typer(
    help="纸面账户 / paper account: run, show, nav, reset（按默认策略每日模拟成交）.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _store() -> Store:
    from wyckoff.config import wyckoff_home

    return Store.in_home(wyckoff_home())


def _market() -> MarketData:
    from wyckoff.agents.market_data import MarketData
    from wyckoff.config import load_config, wyckoff_home

    return MarketData(wyckoff_home(), load_config())


def _labelled(payload: dict[str, Any], source: str) -> dict[str, Any]:
    """The payload with the demo note when the account follows the demo market."""
    from wyckoff.agents.market_data import DEMO_NOTE

    return {"source": source, **({"data_note": DEMO_NOTE} if source == "demo" else {}), **payload}


def _demo_notice(source: str) -> None:
    from wyckoff.agents.market_data import DEMO_NOTE

    if source == "demo":
        print_notice(DEMO_NOTE)


@app.command("reset")
def reset(
    capital: Annotated[float, typer.Option("--capital", help="起始资金（元）")] = 1_000_000,
    start: Annotated[
        str | None, typer.Option("--start", help="从哪个交易日开始按策略决策（默认最新交易日）")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="不再确认，直接重置")] = False,
    json_output: JsonOption = False,
) -> None:
    """重新开始纸面账户（清空原有记录）/ start the paper account over."""
    from wyckoff.agents.backtest import real_date
    from wyckoff.agents.paper import reset_account
    from wyckoff.errors import UsageError
    from wyckoff.ledger.money import amount_cents, yuan

    cents = amount_cents(capital, "起始资金")
    try:
        asked = real_date(start)
    except ValueError as exc:
        raise UsageError(f"{exc}。") from None
    market = _market()
    day = _start_day([str(d) for d in market.bar_dates()], asked)
    if not yes and paper_store.account(_store()) is not None:  # nothing to lose otherwise
        if not is_interactive():
            raise UsageError("重置会删除纸面账户的全部持仓、成交和净值记录；确认请加 --yes。")
        if not typer.confirm("重置会删除纸面账户的全部记录，确定吗？", default=False):
            print_notice("没有重置。")
            return
    account = reset_account(_store(), market.source, cents, day)
    if json_output:
        print_json(_labelled({"account": account}, market.source))
        return
    print_notice(
        f"纸面账户已重置：起始资金 {yuan(cents)} 元，从 {day} 收盘开始按默认策略决策，"
        "次日开盘成交；每个交易日收盘后运行 `wyckoff paper run` 记账。"
    )
    _demo_notice(market.source)


def _start_day(days: list[str], asked: str | None) -> str:
    """The stored trading day the account starts on: the first on or after `asked`, else the
    latest; refused here, not at the first `paper run`, when the days before it cannot warm
    the strategy's indicators up."""
    from wyckoff.engine.window import WARMUP_DAYS
    from wyckoff.errors import UsageError

    if not days:
        raise UsageError("行情库里还没有日线：先运行 `wyckoff data sync`。")
    if asked is None:
        index = len(days) - 1
    else:
        later = [i for i, d in enumerate(days) if d >= asked]
        if not later:
            raise UsageError(f"开始日期 {asked} 晚于行情的最后一天 {days[-1]}：请选更早的日期。")
        index = later[0]
    if index < WARMUP_DAYS:
        need = f"按策略决策需要开始日之前 {WARMUP_DAYS} 个交易日的行情预热指标"
        if len(days) <= WARMUP_DAYS:
            raise UsageError(
                f"行情库只有 {len(days)} 个交易日（{days[0]} 至 {days[-1]}），{need}：先补齐更早的行情。"
            )
        raise UsageError(
            f"{need}，行情库最早只到 {days[0]}：开始日期最早可选 {days[WARMUP_DAYS]}。"
        )
    return days[index]


@app.command("run")
def run(json_output: JsonOption = False) -> None:
    """按默认策略为上次以来的每个交易日记账（可重复运行）/ book the days since the last run."""
    from wyckoff.agents.ledger import broker_fees
    from wyckoff.agents.paper import run_paper
    from wyckoff.config import load_config
    from wyckoff.ledger.days import day_text
    from wyckoff.ledger.money import yuan

    market = _market()
    result = run_paper(_store(), market, broker_fees(load_config()))
    if json_output:
        print_json(_labelled(result, market.source))
        return
    days = result["days"]
    if not days:
        last = result["last_date"]
        print_notice(
            f"没有新的交易日：纸面账户已记到 {day_text(last)}。"
            if last
            else "没有新的交易日可记账。"
        )
    else:
        bought, sold = sum(d["bought"] for d in days), sum(d["sold"] for d in days)
        print_notice(
            f"已记账 {len(days)} 个交易日（{day_text(days[0]['date'])} 至 {day_text(days[-1]['date'])}）："
            f"买入 {bought} 笔，卖出 {sold} 笔；最新净值 {yuan(days[-1]['nav_cents'])} 元。"
            "`wyckoff paper show` 看持仓与成交原因。"
        )
    _demo_notice(market.source)


@app.command("show")
def show(json_output: JsonOption = False) -> None:
    """持仓、现金、待成交订单与最近一天的成交及原因 / positions, orders, last fills."""
    from wyckoff.agents.paper_views import paper_book

    market, _ = _account_market(build=False)
    book = paper_book(_store(), market)
    source = book["account"]["source"]
    if json_output:
        print_json(_labelled(book, source))
        return
    _print_book(book)
    _demo_notice(source)


def _chosen_source() -> str:
    from wyckoff.config import load_config
    from wyckoff.engine.sources.choice import resolve_source

    return resolve_source(load_config())


def _account_market(build: bool) -> tuple[MarketStore | None, str | None]:
    """The market the account follows, not necessarily the chosen source: after `data use`
    another source, the demo account's holdings are still valued at the demo's closes and its
    NAV beside the demo's CSI 300 (two markets are never mixed in one view)."""
    from wyckoff.agents.ledger_report import open_market
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.engine.sources.choice import resolve_source

    home, config = wyckoff_home(), load_config()
    account = paper_store.account(_store())
    if account is None or account["source"] == resolve_source(config):
        return open_market(home, config, build=build)
    market = MarketStore.for_source(home, account["source"])
    if not market.path.exists() or market.is_empty():
        return None, f"纸面账户跟的是 {account['source']} 行情，那个行情库没有数据"
    return market, None


def _print_book(book: dict[str, Any]) -> None:
    from wyckoff.ledger.days import day_text
    from wyckoff.ledger.money import yuan

    account = book["account"]
    last = account["last_date"]
    print_notice(
        f"纸面账户（起始 {yuan(account['capital_cents'])} 元，自 {day_text(account['start_date'])}）："
        f"记到 {day_text(last) if last else '尚未记账'}，总资产 {yuan(book['nav_cents'])} 元，"
        f"现金 {yuan(account['cash_cents'])} 元。"
    )
    if book["positions"]:
        print_table(
            "持仓",
            ["代码", "名称", "股数", "买入日", "成本", "市值"],
            [
                [
                    p["code"],
                    p["name"],
                    p["shares"],
                    day_text(p["entry_date"]),
                    yuan(p["cost_cents"]),
                    "-" if p.get("value_cents") is None else yuan(p["value_cents"]),
                ]
                for p in book["positions"]
            ],
        )
    if book["pending_orders"]:
        print_table(
            "待成交（下一交易日开盘买入）",
            ["代码", "名称", "决策日"],
            [[o["code"], o["name"], day_text(o["decided_date"])] for o in book["pending_orders"]],
        )
    if book["last_fills"]:
        print_table(
            f"{day_text(last)} 的成交",
            ["方向", "代码", "名称", "股数", "价格", "金额", "费用", "原因"],
            [_fill_row(f) for f in book["last_fills"]],
        )
    for order in book["last_unfilled"]:
        print_notice(
            f"{day_text(last)} 未成交：{order['code']} {order['name']}，{order['reason']}。"
        )


def _fill_row(fill: dict[str, Any]) -> list[Any]:
    from wyckoff.ledger.money import yuan

    fees = fill["commission_cents"] + fill["stamp_cents"] + fill["transfer_cents"]
    return [
        "买入" if fill["side"] == "buy" else "卖出",
        fill["code"],
        fill["name"],
        fill["shares"],
        yuan(fill["price_cents"]),
        yuan(fill["value_cents"]),
        yuan(fees),
        fill["reason"],
    ]


@app.command("nav")
def nav(json_output: JsonOption = False) -> None:
    """每日净值，旁边是真实账户与同期沪深300 / daily NAV beside the real account and CSI 300."""
    from wyckoff.agents.paper_views import paper_nav
    from wyckoff.errors import UsageError
    from wyckoff.ledger.chart import line_chart

    market, missing = _account_market(build=True)
    if market is None:
        raise UsageError(f"{missing}（每日净值要用行情库的指数与收盘价。）")
    report = paper_nav(_store(), market, with_real=market.source == _chosen_source())
    source = report["account"]["source"]
    if json_output:
        print_json(_labelled(report, source))
        return
    days = report["days"]
    if days:
        series = {
            "纸面账户": [d["return_pct"] for d in days],
            "沪深300": [d["csi300_pct"] for d in days],
            "真实账户": [d["real_return_pct"] for d in days],
        }
        if all(v is None for v in series["真实账户"]):
            del series["真实账户"]
        typer.echo(line_chart(series))
        _print_nav_table(days)
    if report["note"]:
        print_notice(report["note"])
    _demo_notice(source)


def _print_nav_table(days: list[dict[str, Any]]) -> None:
    from wyckoff.ledger.days import day_text
    from wyckoff.ledger.money import yuan

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:+.2f}%"

    print_table(
        "纸面账户每日净值",
        ["日期", "纸面总资产", "纸面收益", "真实账户总资产", "真实账户收益", "沪深300"],
        [
            [
                day_text(d["date"]),
                yuan(d["nav_cents"]),
                pct(d["return_pct"]),
                "-" if d["real_nav_cents"] is None else yuan(d["real_nav_cents"]),
                pct(d["real_return_pct"]),
                pct(d["csi300_pct"]),
            ]
            for d in days
        ],
    )
