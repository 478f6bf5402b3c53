"""`wyckoff web`: the reading room in a browser, served on this machine (wyckoff/web/)."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Annotated

import typer

from wyckoff.errors import UsageError, os_error_cause

if TYPE_CHECKING:
    from wyckoff.web.security import Guard


def web(
    host: Annotated[str, typer.Option("--host", help="监听地址（默认只在本机）")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="端口（0 = 随机空闲端口）")] = 8765,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="不自动打开浏览器")] = False,
) -> None:
    """浏览器读盘室 / the web reading room: chat, market, screen, stock, portfolio."""
    from wyckoff.web.security import TOKEN_VARIABLE, Guard, server_token

    token = server_token(host, os.environ.get(TOKEN_VARIABLE))
    sock = _bind(host, port)
    guard = Guard(token=token, host=host, port=sock.getsockname()[1])
    url = f"http://{_url_host(host)}:{guard.port}/?token={token}"
    typer.echo(f"读盘室已启动：{url}")
    typer.echo("按 Ctrl+C 停止。地址里的令牌只给你自己用：别分享这个链接。")
    if not no_browser:
        import webbrowser

        webbrowser.open(url)
    _serve(guard, sock)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the URL is printed (so port 0 names the real one)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"端口 {port} 无效：请用 1–65535 之间的数字（0 表示随机空闲端口）。")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        # proto must say TCP: asyncio sets TCP_NODELAY only on such sockets (without it a
        # kept-alive response waits ~40 ms on the delayed ACK)
        sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise UsageError(
            f"无法在 {host}:{port} 上启动（{os_error_cause(exc)}）：换一个 --port 再试。"
        ) from None
    sock.listen(128)
    return sock


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _serve(guard: Guard, sock: socket.socket) -> None:
    import threading

    import uvicorn

    from wyckoff.config import wyckoff_home
    from wyckoff.web.app import create_app
    from wyckoff.web.chat import ChatRoom
    from wyckoff.web.connections import Gate, server_options
    from wyckoff.web.desk import Desk

    desk = Desk(wyckoff_home())
    threading.Thread(target=desk.warm, daemon=True).start()
    app = create_app(guard, desk, ChatRoom())
    # no access log: a first request's URL carries the token
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        **server_options(Gate.from_environ()),
    )
    uvicorn.Server(config).run(sockets=[sock])
