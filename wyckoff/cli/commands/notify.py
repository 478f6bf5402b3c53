"""`wyckoff notify ...`: push channels (the URL and secret stay in environment variables)."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.store import Store

app = typer.Typer(
    help="推送渠道 / push channels: add, list, rm, test.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _store() -> Store:
    from wyckoff.config import wyckoff_home

    return Store.in_home(wyckoff_home())


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="渠道名，如 phone")],
    kind: Annotated[
        str, typer.Option("--kind", help="feishu | wecom | dingtalk | telegram | email | webhook")
    ],
    url_env: Annotated[str, typer.Option("--url-env", help="存放 webhook 地址的环境变量名")],
    secret_env: Annotated[
        str | None, typer.Option("--secret-env", help="存放签名密钥（邮件：密码）的环境变量名")
    ] = None,
) -> None:
    """添加推送渠道（只保存环境变量名）/ add a channel."""
    from wyckoff.routine.notify import add_channel

    channel = add_channel(_store(), name, kind, url_env, secret_env)
    print_notice(f"已添加渠道 {channel.name}（{channel.kind}），地址：{channel.masked_url()}")


@app.command("list")
def list_channels(
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出推送渠道（地址已遮盖）/ list channels, URLs masked."""
    from wyckoff.routine.notify import channels

    found = [
        {
            "name": c.name,
            "kind": c.kind,
            "url_env": c.url_env,
            "secret_env": c.secret_env,
            "url": c.masked_url(),
        }
        for c in channels(_store())
    ]
    if json_output:
        print_json({"channels": found})
        return
    if not found:
        print_notice(
            "还没有推送渠道。用 `wyckoff notify add phone --kind feishu --url-env FEISHU_WEBHOOK` 添加。"
        )
        return
    print_table(
        "推送渠道",
        ["名称", "类型", "地址变量", "密钥变量", "地址"],
        [[c["name"], c["kind"], c["url_env"], c["secret_env"] or "-", c["url"]] for c in found],
    )


@app.command("rm")
def remove(name: Annotated[str, typer.Argument(help="渠道名")]) -> None:
    """删除推送渠道 / remove a channel."""
    from wyckoff.routine.notify import remove_channel

    remove_channel(_store(), name)
    print_notice(f"已删除渠道 {name}。")


@app.command("test")
def test(target: Annotated[str, typer.Argument(help="渠道名，或 all")] = "all") -> None:
    """发一条测试消息 / send a test message."""
    from wyckoff.routine.notify import chosen

    raise typer.Exit(
        report_push(
            chosen(_store(), target), "Wyckoff 测试", "这是一条测试消息：推送渠道工作正常。"
        )
    )


def push_targets(target: str, unsent: str) -> list:
    """The channels to push to; `all` with none configured pushes nothing and says `unsent`
    (a scheduled run still does its work without a channel)."""
    from wyckoff.routine.notify import channels, chosen

    store = _store()
    if target == "all" and not channels(store):
        print_notice(f"还没有推送渠道，{unsent}（`wyckoff notify add` 添加渠道）。")
        return []
    return chosen(store, target)


def report_push(targets, title: str, text: str) -> int:
    """Push and say per channel how it went; exit code 1 when any channel failed."""
    from wyckoff.routine.notify import push

    results = push(targets, title, text)
    for result in results:
        if result["ok"]:
            print_notice(f"已推送到 {result['channel']}（{result['parts']} 条）。")
        else:
            print_notice(f"推送失败：{result['error']}")
    return 0 if all(r["ok"] for r in results) else 1
