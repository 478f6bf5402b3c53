"""`wyckoff watch list`: what it prints. Imports no Typer and no tool layer, so the light path
(cli/light_commands.py) runs it directly; watch.py's Typer command calls the same function."""

from __future__ import annotations

from wyckoff import watchlist_store
from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.store import Store


def list_watched(tag: str | None = None, json_output: bool = False) -> None:
    """`wyckoff watch list`: the watched stocks (only those tagged `tag`), as a table or JSON."""
    from wyckoff.config import wyckoff_home

    items = watchlist_store.watched(Store.in_home(wyckoff_home()), tag)
    if json_output:
        print_json({"watchlist": items})
        return
    if not items:
        print_notice("自选股为空。用 `wyckoff watch add 600519 --tag 白酒` 添加。")
        return
    print_table(
        "自选股",
        ["代码", "名称", "标签", "备注"],
        [[w["code"], w["name"], "、".join(w["tags"]), w["note"]] for w in items],
    )
