"""Other MCP servers' tools in Wyckoff's registry.

Servers are configured in `$WYCKOFF_HOME/mcp.json` (`wyckoff mcp add/list/rm/test`). Each
server's tools become ToolSpecs named `SERVER__tool`: they need the user's approval unless
the server was added with `--trust`, are concurrency-safe only when the server annotates
them read-only, and their results reach the model inside the untrusted-data marker (like
every data result). Sessions stay open on one background event loop for the process; a
server that fails to start or to answer in time is reported once and skipped.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import copy
import json
import logging
import os
import re
import signal
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wyckoff.cli.tools import ToolContext, ToolFailure, ToolRegistry, ToolSpec, canonical_args
from wyckoff.config import (
    describe_validation_error,
    locked,
    read_json_file,
    redact_text,
    write_private_file,
)
from wyckoff.errors import ConfigError, UsageError, WyckoffError
from wyckoff.mcp.remote_schema import SchemaTooLarge, capped_schema, tool_description

CONFIG_FILE = "mcp.json"
LOG_DIR = "logs"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,29}$")
SEPARATOR = "__"
CONNECT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 120.0
MAX_SAID_CHARS = 200  # of a server's own error message, quoted in ours
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRET_ENV_NAME = re.compile(
    r"(^|_)(KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PAT|AUTH|AUTHORIZATION|COOKIE|"
    r"CREDENTIALS?|PRIVATE|PASSPHRASE|BEARER)(_|$)|_PWD(_|$)",  # PWD alone: the working dir
    re.I,
)
# Values that are secrets whatever the variable is called: a password inside a URL, a token
# in a webhook's query, GitHub / GitLab / Slack / AWS tokens by their prefixes, a JWT.
SECRET_ENV_VALUE = re.compile(
    r"://[^/\s:@]+:[^/\s@]+@|[?&](access_token|token|key|secret|sign|signature)="
    r"|^(ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abposr]-|AKIA[0-9A-Z]{12})"
    r"|^eyJ[\w-]+\.eyJ[\w-]+\.",
    re.I,
)

logging.getLogger("mcp").addHandler(logging.NullHandler())  # no SDK tracebacks on the CLI


class ServerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")  # as wyckoff.json: a misspelt key is refused

    name: str
    command: list[str] | None = Field(default=None, description="stdio：命令与参数")
    url: str | None = Field(default=None, description="streamable HTTP 地址")
    bearer_env: str | None = Field(default=None, description="存放 Bearer token 的环境变量名")
    trust: bool = Field(default=False, description="True 时调用不需要批准")
    timeout_s: float = Field(default=CONNECT_TIMEOUT_S, gt=0, description="启动并列出工具的时限")
    env: dict[str, str] = Field(default_factory=dict, description="stdio：写在配置里的环境变量")
    env_from: list[str] = Field(
        default_factory=list, description="stdio：启动时从 Wyckoff 自己的环境取值的变量名（密钥）"
    )

    def target(self) -> str:
        return self.url or " ".join(self.command or [])

    def env_text(self) -> str:
        """The server's extra environment as `mcp list` shows it: references by name only."""
        given = [f"{key}={redact_text(value)}" for key, value in self.env.items()]
        return "；".join([*given, *(f"{key}=（启动时从环境读取）" for key in self.env_from)])


def parse_env(pairs: list[str]) -> tuple[dict[str, str], list[str]]:
    """`--env KEY=VALUE` values and `--env KEY` references. A secret is never written into
    mcp.json: a value that looks like one is refused, with the reference to use instead."""
    env: dict[str, str] = {}
    references: list[str] = []
    for pair in pairs:
        key, has_value, value = pair.partition("=")
        if not ENV_NAME.match(key):
            raise UsageError(
                f"--env {pair} 无效：写成 KEY=VALUE，或只写 KEY（启动时从你的环境读取）；"
                "KEY 只含字母、数字和下划线，不以数字开头。"
            )
        if not has_value:
            references.append(key)
        elif looks_secret(key, value):
            raise UsageError(
                f"{key} 的值看起来是密钥，不会写进 mcp.json：先 `export {key}=…`，"
                f"再用 `--env {key}`（启动服务器时从你的环境读取）。"
            )
        else:
            env[key] = value
    return env, references


def looks_secret(key: str, value: str) -> bool:
    return (
        bool(SECRET_ENV_NAME.search(key) or SECRET_ENV_VALUE.search(value))
        or redact_text(value) != value
    )


# --- configuration ------------------------------------------------------------------------


def load_servers(home: Path) -> list[ServerEntry]:
    path = home / CONFIG_FILE
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        return []
    if not isinstance(data, list):
        raise ConfigError(
            f"{path} 格式不对（应是服务器的列表）：修正它，或删除后用 `wyckoff mcp add` 重新添加。"
        )
    entries = []
    for number, item in enumerate(data, 1):
        try:
            entries.append(ServerEntry.model_validate(item))
        except ValidationError as exc:
            raise ConfigError(
                f"{path} 第 {number} 项有误：{describe_validation_error(exc, ServerEntry)}。"
                "修正它，或删除后用 `wyckoff mcp add` 重新添加。"
            ) from None
    return entries


def save_servers(home: Path, entries: list[ServerEntry]) -> None:
    """Replace mcp.json atomically, owner-only (call it under `locked`, after reading)."""
    payload = [e.model_dump(exclude_none=True, exclude_defaults=True) for e in entries]
    write_private_file(home / CONFIG_FILE, json.dumps(payload, ensure_ascii=False, indent=2))


def add_server(home: Path, entry: ServerEntry) -> ServerEntry | None:
    """Save `entry`; one of the same name is replaced in place and returned."""
    if not NAME_PATTERN.match(entry.name):
        raise UsageError(
            f"服务器名 '{entry.name}' 不合法：用小写字母开头，只含小写字母、数字和 -，最多 30 个字符。"
        )
    if bool(entry.command) == bool(entry.url):
        raise UsageError("请给出 `-- 命令 参数…`（stdio）或 `--url 地址`（HTTP），二者选一。")
    with locked(home / CONFIG_FILE):
        entries = load_servers(home)
        replaced = next((e for e in entries if e.name == entry.name), None)
        if replaced is None:
            entries.append(entry)
        else:
            entries[entries.index(replaced)] = entry
        save_servers(home, entries)
    return replaced


def remove_server(home: Path, name: str) -> None:
    with locked(home / CONFIG_FILE):
        entries = load_servers(home)
        if name not in {e.name for e in entries}:
            raise UsageError(f"没有名为 {name} 的 MCP 服务器：`wyckoff mcp list` 查看已添加的。")
        save_servers(home, [e for e in entries if e.name != name])


# --- connections --------------------------------------------------------------------------


@asynccontextmanager
async def open_session(entry: ServerEntry, home: Path):
    """(an initialised ClientSession to one server, the pid of its process if it is a stdio
    server); its stderr goes to logs/mcp-NAME.log."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    pid = None
    async with AsyncExitStack() as stack:
        if entry.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {}
            if entry.bearer_env:
                token = os.environ.get(entry.bearer_env, "").strip()
                if not token:
                    raise ConfigError(
                        f"环境变量 {entry.bearer_env} 没有设置（它是这个服务器的 Bearer token）"
                    )
                headers["Authorization"] = f"Bearer {token}"
            client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
            read, write = await stack.enter_async_context(
                streamable_http_client(entry.url, http_client=client)
            )
        else:
            command = entry.command or []
            (home / LOG_DIR).mkdir(exist_ok=True)
            log = stack.enter_context((home / LOG_DIR / f"mcp-{entry.name}.log").open("a"))
            params = StdioServerParameters(
                command=command[0], args=command[1:], env=server_environment(entry, home)
            )
            transport = stdio_client(params, errlog=log)
            read, write = await stack.enter_async_context(transport)
            pid = server_pid(transport)
        session = await stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(entry.timeout_s):
            await session.initialize()
        yield session, pid


def server_pid(transport: Any) -> int | None:
    """The pid of a stdio server. The SDK has no way to ask: its transport keeps the process
    in a local variable of the generator behind the context manager."""
    frame = getattr(getattr(transport, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    return getattr(process, "pid", None)


def end_process_group(pid: int) -> None:
    """SIGKILL a stdio server and whatever it started (the SDK starts it as a group leader)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def server_environment(entry: ServerEntry, home: Path) -> dict[str, str]:
    """What a stdio server gets beyond the SDK's minimal environment: the WYCKOFF_HOME in use
    (so `wyckoff-mcp` added as a server reads this home), the entry's values and, by
    reference, the named variables of this process."""
    missing = [key for key in entry.env_from if not os.environ.get(key)]
    if missing:
        raise ConfigError(
            f"环境变量 {'、'.join(missing)} 没有设置（添加时用 `--env` 指定由环境提供）："
            "先 export 再启动 Wyckoff"
        )
    passed = {key: os.environ[key] for key in entry.env_from}
    return {"WYCKOFF_HOME": str(home), **entry.env, **passed}


async def list_all_tools(session) -> list[Any]:
    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=_page(cursor))
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _page(cursor: str | None):
    import mcp_types as types

    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


class RemoteServers:
    """Open sessions to the configured servers, on one background event loop."""

    def __init__(self, home: Path) -> None:
        from anyio.from_thread import start_blocking_portal

        self.home = home
        self._portal_context = start_blocking_portal()
        self.portal = self._portal_context.__enter__()
        self._open: list[Any] = []
        self.sessions: dict[str, Any] = {}
        self.pids: dict[str, int] = {}
        self.unanswered: dict[concurrent.futures.Future, str] = {}  # call -> its server
        atexit.register(self.close)

    def connect(self, entry: ServerEntry) -> list[Any]:
        """Open the session and list its tools; raises whatever went wrong."""
        context = self.portal.wrap_async_context_manager(open_session(entry, self.home))
        session, pid = context.__enter__()
        self._open.append(context)
        self.sessions[entry.name] = session
        if pid is not None:
            self.pids[entry.name] = pid
        return self.portal.call(partial(_bounded, entry.timeout_s, list_all_tools, session))

    def call(self, server: str, tool: str, args: dict[str, Any], context: ToolContext) -> Any:
        """The server's CallToolResult; the user's cancel cancels the request on the server."""
        session = self.sessions[server]
        pending = self.portal.start_task_soon(
            partial(_bounded, CALL_TIMEOUT_S, session.call_tool, tool, args)
        )
        self.unanswered[pending] = server  # a cancelled call stays: the server may be hung
        while not concurrent.futures.wait([pending], timeout=0.05).done:
            if context.cancelled():
                pending.cancel()  # the SDK tells the server (notifications/cancelled)
                raise ToolFailure("已被用户取消。")
        del self.unanswered[pending]
        try:
            return pending.result()
        except Exception as exc:  # a foreign server can fail in any way
            raise call_failure(server, exc) from None

    def close(self) -> None:
        """Close every session. A stdio server that never answered a call (cancelled by the
        user, or still running as the process ends) may be hung: deaf to the cancel, to its
        closed input and to SIGTERM. It is killed first instead of being given the SDK's
        grace periods (2 s + 2 s), so `ask` ends at once after a Ctrl+C."""
        for server in set(self.unanswered.values()) & self.pids.keys():
            end_process_group(self.pids[server])
        for context in reversed(self._open):
            with contextlib.suppress(Exception):  # a server that died cannot be closed more
                context.__exit__(None, None, None)
        self._open.clear()
        self._portal_context.__exit__(None, None, None)
        atexit.unregister(self.close)


def call_failure(server: str, exc: Exception) -> ToolFailure:
    """A failed call as the model reads it: the server's own words are outside text."""
    if isinstance(exc, TimeoutError):
        return ToolFailure(f"MCP 服务器 {server} 超过 {CALL_TIMEOUT_S:g} 秒没有回答，已放弃。")
    if connection_closed(exc):
        return ToolFailure(
            f"MCP 服务器 {server} 已断开（进程退出或连接中断）：重新启动 wyckoff 后再试。"
        )
    said = getattr(exc, "message", None) or str(exc)  # an MCPError's message is the server's
    return ToolFailure(
        f"调用 MCP 服务器 {server} 的工具失败。", untrusted=f"{type(exc).__name__}: {said}"
    )


async def _bounded(seconds: float, func, *args):
    import anyio

    with anyio.fail_after(seconds):
        return await func(*args)


# --- tools --------------------------------------------------------------------------------


def tool_name(server: str, tool: str) -> str:
    """`SERVER__tool`, in the characters every provider accepts (at most 64)."""
    return f"{server}{SEPARATOR}{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"[:64]


def remote_params(published: dict[str, Any]) -> type[BaseModel]:
    """A params model whose JSON schema is the server's own (capped); the server validates."""

    class RemoteArguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(published)

    return RemoteArguments


def remote_spec(servers: RemoteServers, entry: ServerEntry, tool: Any) -> ToolSpec:
    """The server's tool as a ToolSpec; SchemaTooLarge when its schema cannot be capped."""
    name = tool_name(entry.name, tool.name)
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    schema = capped_schema(entry.name, name, tool.input_schema)

    def call(params: BaseModel, context: ToolContext) -> Any:
        result = servers.call(entry.name, tool.name, params.model_dump(), context)
        text = "\n".join(getattr(block, "text", "") for block in result.content).strip()
        if result.is_error:
            raise ToolFailure(
                f"MCP 服务器 {entry.name} 的工具 {name} 报错。", untrusted=text or "（无说明）"
            )
        return result.structured_content if result.structured_content is not None else text

    def describe(params: BaseModel, context: ToolContext) -> str:
        return f"调用外部 MCP 服务器 {entry.name} 的工具 {tool.name}，参数 {canonical_args(params.model_dump())}"

    return ToolSpec(
        name=name,
        description=tool_description(entry.name, tool.description),
        params=remote_params(schema),
        func=call,
        title=f"{entry.name}：{tool.title or tool.name}",
        concurrency_safe=read_only,
        requires_approval=not entry.trust,
        timeout_s=CALL_TIMEOUT_S + 5,
        describe=describe,
    )


_CONNECTED: dict[Path, tuple[list[ToolSpec], list[str]]] = {}


def attach_mcp_servers(registry: ToolRegistry, home: Path) -> list[str]:
    """Register every configured server's tools. Returns one Chinese warning per server
    skipped, the first time only: the servers are connected once per process."""
    first = home not in _CONNECTED
    if first:
        _CONNECTED[home] = connect_all(home)
    specs, warnings = _CONNECTED[home]
    for spec in specs:
        registry.register(spec)
    return warnings if first else []


def connect_all(home: Path) -> tuple[list[ToolSpec], list[str]]:
    try:
        entries = load_servers(home)
    except ConfigError as exc:  # a broken mcp.json costs its servers, not the session
        return [], [f"{exc.message}这次没有加载任何 MCP 服务器。"]
    if not entries:
        return [], []
    servers = RemoteServers(home)
    specs, warnings = [], []
    for entry in entries:
        try:
            tools = servers.connect(entry)
        except Exception as exc:  # a foreign server can fail in any way; the session goes on
            warnings.append(f"{unavailable(entry, exc)}。已跳过，会话继续。")
            continue
        for tool in tools:
            try:
                specs.append(remote_spec(servers, entry, tool))
            except SchemaTooLarge as exc:
                warnings.append(f"{exc.message}。")
    return specs, warnings


def unavailable(entry: ServerEntry, exc: BaseException) -> str:
    """Why a server cannot be used, in one Chinese sentence with what to do (the first
    cause of a task group's)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"MCP 服务器 {entry.name}（{entry.target()}）无法使用：{failure_reason(entry, exc)}"


def failure_reason(entry: ServerEntry, exc: BaseException) -> str:
    log = "" if entry.url else f"（它的输出在 $WYCKOFF_HOME/{LOG_DIR}/mcp-{entry.name}.log）"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, WyckoffError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return f"{entry.timeout_s:g} 秒内没有响应（可用 `wyckoff mcp add … --timeout 秒` 放宽）"
    if isinstance(exc, FileNotFoundError) and entry.command:
        return f"找不到命令 {entry.command[0]}：检查拼写，或写成绝对路径（`which 命令` 可查）"
    if isinstance(exc, PermissionError) and entry.command:
        return f"没有权限运行 {entry.command[0]}：检查它的执行权限（chmod +x）"
    if status in (401, 403):
        return f"服务器拒绝了请求（HTTP {status}）：检查 token（`--bearer-env 变量名`）"
    if status is not None:
        return f"服务器返回 HTTP {status}：检查地址是不是 MCP 端点（通常以 /mcp 结尾）"
    if is_connect_error(exc):
        return f"连不上 {entry.url}：服务器没有运行，或地址、端口不对"
    if connection_closed(exc):
        return f"没有完成 MCP 握手：它可能不是 MCP 服务器，或启动后就退出了{log}"
    said = getattr(getattr(exc, "error", None), "message", None)  # an MCPError: its words
    if said:
        return f"服务器拒绝了连接，它说：{said[:MAX_SAID_CHARS]}"
    return f"连接失败（{type(exc).__name__}）{log}"


def is_connect_error(exc: BaseException) -> bool:
    import httpx2

    return isinstance(exc, ConnectionError | httpx2.ConnectError)


def connection_closed(exc: BaseException) -> bool:
    import anyio
    import mcp_types as types

    error = getattr(exc, "error", None)
    # a server may send -32000 itself (the JSON-RPC server-error range): only the SDK's own
    # closing error, with its message, means the connection is gone
    closed_code = (getattr(error, "code", None), getattr(error, "message", None)) == (
        types.CONNECTION_CLOSED,
        "Connection closed",
    )
    return closed_code or isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)
