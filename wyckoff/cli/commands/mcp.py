"""`wyckoff mcp ...`: other MCP servers whose tools the agent may use."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import print_notice, print_table
from wyckoff.errors import UsageError, WyckoffError

app = typer.Typer(
    help="外部 MCP 服务器 / MCP servers: add, list, rm, test.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="服务器名（工具会叫 名__工具）")],
    command: Annotated[
        list[str] | None, typer.Argument(help="`--` 之后：启动 stdio 服务器的命令和参数")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="streamable HTTP 地址")] = None,
    bearer_env: Annotated[
        str | None, typer.Option("--bearer-env", help="HTTP：存放 Bearer token 的环境变量名")
    ] = None,
    trust: Annotated[
        bool, typer.Option("--trust", help="它的工具调用不再需要批准（只对你信任的服务器）")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="启动并列出工具的时限（秒），超时即跳过")
    ] = 30.0,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            help="stdio：给服务器的环境变量 KEY=VALUE（可重复）；密钥只写 KEY，启动时从你的环境读取",
        ),
    ] = None,
) -> None:
    """添加服务器：`wyckoff mcp add NAME -- 命令 参数…` 或 `wyckoff mcp add NAME --url URL`。"""
    from wyckoff.config import wyckoff_home
    from wyckoff.mcp.client import ServerEntry, add_server, parse_env

    if timeout <= 0:
        raise UsageError("--timeout 必须大于 0 秒。")
    if env and url:
        raise UsageError(
            "--env 只用于 stdio 服务器（`-- 命令 参数…`）；HTTP 服务器用 --bearer-env。"
        )
    values, references = parse_env(env or [])
    entry = ServerEntry(
        name=name,
        command=command or None,
        url=url,
        bearer_env=bearer_env,
        trust=trust,
        timeout_s=timeout,
        env=values,
        env_from=references,
    )
    replaced = add_server(wyckoff_home(), entry)
    approval = "调用不需要批准（--trust）" if trust else "每次调用都需要批准"
    # as `model add` does for a model of that name: the new settings replace the old ones
    if replaced is None:
        done = f"已添加 MCP 服务器 {name}（{entry.target()}）"
    else:
        done = f"已更新 MCP 服务器 {name}（{entry.target()}，替换原来的 {replaced.target()}）"
    print_notice(f"{done}：工具名为 {name}__…，{approval}。")


@app.command("list")
def list_servers() -> None:
    """列出已添加的服务器 / configured servers."""
    from wyckoff.config import wyckoff_home
    from wyckoff.mcp.client import load_servers

    entries = load_servers(wyckoff_home())
    if not entries:
        print_notice("还没有添加 MCP 服务器：`wyckoff mcp add NAME -- 命令 参数…`。")
        return
    print_table(
        "MCP 服务器",
        ["名称", "连接", "批准", "环境变量"],
        [
            [e.name, e.target(), "不需要（trust）" if e.trust else "需要", e.env_text()]
            for e in entries
        ],
    )


@app.command("rm")
def remove(name: Annotated[str, typer.Argument(help="服务器名")]) -> None:
    """删除服务器 / remove a server."""
    from wyckoff.config import wyckoff_home
    from wyckoff.mcp.client import remove_server

    remove_server(wyckoff_home(), name)
    print_notice(f"已删除 MCP 服务器 {name}。")


@app.command("test")
def test(name: Annotated[str, typer.Argument(help="服务器名")]) -> None:
    """连接服务器并列出它的工具 / connect and list its tools."""
    from wyckoff.config import wyckoff_home
    from wyckoff.mcp.client import RemoteServers, load_servers, tool_name, unavailable

    home = wyckoff_home()
    entry = next((e for e in load_servers(home) if e.name == name), None)
    if entry is None:
        raise UsageError(f"没有名为 {name} 的 MCP 服务器：`wyckoff mcp list` 查看已添加的。")
    servers = RemoteServers(home)
    try:
        tools = servers.connect(entry)
    except Exception as exc:  # whatever a foreign server does wrong, say it in one sentence
        raise WyckoffError(unavailable(entry, exc)) from None
    finally:
        servers.close()
    print_table(
        f"{name} 的工具（{len(tools)} 个）",
        ["工具名", "只读", "说明"],
        [
            [
                tool_name(name, t.name),
                "是" if t.annotations and t.annotations.read_only_hint else "",
                (t.description or "")[:60],
            ]
            for t in tools
        ],
    )
