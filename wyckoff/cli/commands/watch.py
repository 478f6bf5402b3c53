"""`wyckoff watch ...`: the watchlist (stocks followed, with tags and a note)."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import print_notice
from wyckoff.store import Store

app = typer.Typer(
    help="自选股 / watchlist: add, rm, list, undo.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _watchlist():
    from wyckoff.config import wyckoff_home
    from wyckoff.routine.watchlist import Watchlist

    return Watchlist(Store.in_home(wyckoff_home()))


def _done(change: dict) -> None:
    from wyckoff.routine.watchlist import describe_change

    print_notice(describe_change(change))


@app.command("add")
def add(
    stocks: Annotated[list[str], typer.Argument(help="6 位代码或股票名称，可以多个")],
    tag: Annotated[list[str], typer.Option("--tag", help="标签，可重复")] = [],  # noqa: B006
    note: Annotated[str | None, typer.Option("--note", help="备注")] = None,
) -> None:
    """加入自选（已在自选则追加标签、替换备注）/ watch stocks."""
    watchlist = _watchlist()
    for stock in stocks:
        _done(watchlist.add(stock, tag, note))


@app.command("rm")
def remove(stock: Annotated[str, typer.Argument(help="6 位代码或股票名称")]) -> None:
    """移出自选 / stop watching a stock."""
    _done(_watchlist().remove(stock))


@app.command("list")
def list_watched(
    tag: Annotated[str | None, typer.Option("--tag", help="只列出带这个标签的")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出自选股 / list the watchlist."""
    from wyckoff.cli.commands.watch_views import list_watched as print_watched

    print_watched(tag, json_output)


@app.command("undo")
def undo() -> None:
    """撤销最近一次自选股改动 / undo the newest change."""
    _done(_watchlist().undo())
