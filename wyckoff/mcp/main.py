"""`wyckoff-mcp`: serve Wyckoff's tools over MCP.

stdio by default (what Claude Code, Cursor and Codex launch); `--http` serves streamable
HTTP on 127.0.0.1. Bound to any other address it requires a bearer token
(WYCKOFF_MCP_TOKEN), and a token that is set is required on loopback too.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys

from wyckoff.errors import UsageError, WyckoffError, os_error_cause
from wyckoff.loopback import is_loopback
from wyckoff.store import Store

TOKEN_VARIABLE = "WYCKOFF_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_PORT = 8765
REFUSED = "需要有效的 Bearer token（Authorization: Bearer …），请求被拒绝。"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from wyckoff.mcp.server import DEFAULT_TIER, TIERS

    tiers = "；".join(f"{n} {label}" for n, label in TIERS.items())
    parser = ChineseArgumentParser(
        prog="wyckoff-mcp",
        description="通过 MCP 把 Wyckoff 的工具提供给 Claude Code、Cursor、Codex 等外部智能体。",
        formatter_class=ChineseHelpFormatter,
        add_help=False,
    )
    parser._optionals.title = "选项"
    parser.add_argument("-h", "--help", action="help", help="显示本帮助并退出")
    parser.add_argument(
        "--tier",
        type=int,
        choices=sorted(TIERS),
        default=DEFAULT_TIER,
        help=f"提供哪一层及以下的工具（{tiers}）；默认 {DEFAULT_TIER}，3 必须显式指定",
    )
    parser.add_argument("--http", action="store_true", help="用 streamable HTTP 代替 stdio")
    parser.add_argument("--host", default="127.0.0.1", help="--http 绑定的地址，默认 127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="--http 的端口")
    return parser.parse_args(argv)


ARGPARSE_ERRORS = (  # argparse's English, as one Chinese phrase
    (r"argument (\S+): invalid choice: '?(.+?)'? \(choose from (.+)\)", "{0} 只能是 {2}，收到 {1}"),
    (r"argument (\S+): invalid int value: '(.*)'", "{0} 需要一个整数，收到 {1}"),
    (r"argument (\S+): expected one argument", "{0} 后面缺少取值"),
    (r"unrecognized arguments: (.*)", "不认识的参数 {0}"),
)


class ChineseHelpFormatter(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None) -> None:
        super().add_usage(usage, actions, groups, "用法：" if prefix is None else prefix)


class ChineseArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        """One Chinese sentence and exit code 2, like every other usage error."""
        import re

        for pattern, phrase in ARGPARSE_ERRORS:
            found = re.fullmatch(pattern, message)
            if found:
                message = phrase.format(*found.groups())
                break
        else:
            message = f"命令行有误（{message}）"
        sys.stderr.write(f"错误：{message}。用 `wyckoff-mcp -h` 查看用法。\n")
        sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    os.umask(0o077)
    args = parse_args(argv)
    try:
        token = http_token(args.host) if args.http else None
        context = open_context(args.tier)
        from wyckoff.mcp.server import build_server

        server = build_server(context, args.tier)
        if args.http:
            serve_http(server, args.host, args.port, token, args.tier)
        else:
            serve_stdio(server)
    except WyckoffError as exc:
        sys.stderr.write(f"错误：{exc.message}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


def http_token(host: str) -> str | None:
    """The bearer token clients must send; required unless bound to loopback."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip() or None
    if token is None and not is_loopback(host):
        raise UsageError(
            f"绑定到 {host} 会让其他机器也能调用你的工具：请先设置环境变量 {TOKEN_VARIABLE}"
            f"（至少 {MIN_TOKEN_CHARS} 个字符的随机串），客户端用 Authorization: Bearer 发送它。"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"{TOKEN_VARIABLE} 太短：至少需要 {MIN_TOKEN_CHARS} 个字符。")
    return token


def open_context(tier: int):
    """The ToolContext every call runs with: WYCKOFF_HOME's config, data source and store;
    the configured model only at tier 3 (reports and decisions need one)."""
    from wyckoff.cli.builtin_tools import mcp_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.config import load_config, wyckoff_home

    home = wyckoff_home()
    config = load_config(home)
    provider = None
    if tier >= 3:
        from wyckoff.cli.providers.factory import build_provider

        try:
            provider = build_provider(config)
        except WyckoffError as exc:  # the model tools say so when called; the rest work
            sys.stderr.write(
                f"wyckoff-mcp：没有可用的模型（{exc.message}），研报与决策工具将报错。\n"
            )
    return ToolContext(
        home=home, registry=mcp_registry(), store=Store.in_home(home), provider=provider
    )


def serve_stdio(server) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_http(server, host: str, port: int, token: str | None, tier: int) -> None:
    """Serve on a socket bound here, so the printed address is the one listening (with
    `--port 0`, the free port the system chose)."""
    import socket

    import uvicorn

    app = server.streamable_http_app(host=host)
    if token is not None:
        app = BearerGate(app, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise UsageError(
            f"无法在 {host}:{port} 上监听（{os_error_cause(exc)}）：换一个端口（--port）。"
        ) from None
    port = listener.getsockname()[1]
    sys.stderr.write(
        f"wyckoff-mcp：tier {tier}，http://{host}:{port}/mcp"
        f"{'（需要 Bearer token）' if token else ''}\n"
    )
    sys.stderr.flush()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


class BearerGate:
    """ASGI wrapper: an HTTP request without `Authorization: Bearer <token>` gets 401."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                from starlette.responses import JSONResponse

                response = JSONResponse(  # a JSON-RPC error, so MCP clients show the sentence
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": REFUSED}},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
