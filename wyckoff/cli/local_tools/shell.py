"""exec_command: a shell command the user approved after seeing every part of it.

The command is parsed with bashlex before anything runs: the approval lists each command
of a chain, pipe, substitution or subshell and each redirection, and a command bashlex
cannot parse is refused. The approved text then runs through bash (no profile) in the
workspace with stdin closed, an environment without keys or daemon sockets, a timeout that
kills the whole process group, capped output, resource limits and the sandbox sandbox.py
chooses (bubblewrap, else Landlock, else none), which the approval names.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from wyckoff.cli.blas_threads import environment_to_pass_on
from wyckoff.cli.local_tools.sandbox import (
    BUBBLEWRAP,
    chosen_sandbox,
    command_line,
    describe_sandbox,
    process_cgroup,
)
from wyckoff.cli.local_tools.workspace import display, exports_dir, resolve, workspace_root
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.cli.visible_text import visible
from wyckoff.config import known_secrets, redact_text

DEFAULT_TIMEOUT_S = 60
MAX_TIMEOUT_S = 600
OUTPUT_CAP_BYTES = 1024 * 1024  # per stream; the registry spills a long result to disk
READ_CHUNK = 65536
USER_UMASK = 0o022  # files the user's commands make are ordinary files, not Wyckoff's 0600 state
GROUP_EXIT_WAIT_S = 2.0  # after SIGKILL, how long to wait for the group to be gone
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
# Addresses of daemons that would run what they are told outside any sandbox: terminal
# multiplexers, D-Bus (the systemd user manager), agents, Docker, the display server.
DAEMON_VARIABLES = frozenset(
    {
        "TMUX",
        "TMUX_PANE",
        "STY",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "XDG_RUNTIME_DIR",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XAUTHORITY",
        "KITTY_LISTEN_ON",
        "WEZTERM_UNIX_SOCKET",
        "NVIM",
        "NVIM_LISTEN_ADDRESS",
    }
)


class ExecCommandParams(BaseModel):
    command: str = Field(description="要运行的 shell 命令（bash 语法）")
    cwd: str = Field(default=".", description="工作目录，工作区内的相对路径")
    timeout_s: int = Field(
        default=DEFAULT_TIMEOUT_S, ge=1, le=MAX_TIMEOUT_S, description="超时秒数，超时会终止命令"
    )
    network: bool = Field(
        default=False, description="命令需要联网时设为 true（批准框会写明）；默认不能联网"
    )


@dataclass(frozen=True)
class CommandPlan:
    """What a command would do, as parsed: its commands and redirections, in order."""

    commands: list[str]
    redirections: list[str]


def plan_command(command: str) -> CommandPlan:
    """Every command and redirection in `command`; a command bashlex cannot parse is refused."""
    import bashlex

    if not command.strip():
        raise ToolFailure("命令是空的。")
    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises several error types for unsupported syntax
        raise ToolFailure(
            f"无法解析这条命令（{exc}），为安全起见不执行：请改写成简单的命令、管道或 && 连接。"
        ) from None
    commands, redirections = [], []
    for tree in trees:
        for node in _walk(tree):
            if node.kind == "command":
                commands.append(visible(command[node.pos[0] : node.pos[1]]))
            elif node.kind == "redirect":
                redirections.append(visible(command[node.pos[0] : node.pos[1]]))
    return CommandPlan(commands=commands, redirections=redirections)


def _walk(node):
    """Every node under `node`, including commands inside substitutions and redirections."""
    import bashlex

    yield node
    for name in ("parts", "list"):
        for child in getattr(node, name, None) or []:
            yield from _walk(child)
    for name in ("command", "output", "body"):
        child = getattr(node, name, None)
        if isinstance(child, bashlex.ast.node):
            yield from _walk(child)


def describe_command(params: ExecCommandParams, context: ToolContext) -> str:
    """The approval text: the exact command, where it runs, and every part bashlex found."""
    try:
        plan = plan_command(params.command)
        where = f"工作区 {workspace_root()}"
        if params.cwd.strip() not in ("", "."):
            where += f" 下的 {display(resolve(params.cwd))}"
        sandbox = describe_sandbox(chosen_sandbox(), params.network)
    except ToolFailure as exc:
        return f"运行命令 {visible(params.command)}（不会执行：{exc.message}）"
    lines = [
        f"在{where} 运行命令（{sandbox}，超时 {params.timeout_s} 秒）：",
        f"  {visible(params.command)}",
        f"其中共 {len(plan.commands)} 条命令：",
        *(f"  {n}. {text}" for n, text in enumerate(plan.commands, 1)),
    ]
    if plan.redirections:
        lines += ["重定向：", *(f"  {text}" for text in plan.redirections)]
    return "\n".join(lines)


def child_environment(temp_dir: str) -> dict[str, str]:
    """The environment without anything named like a key, holding a known key's value or
    pointing at a daemon's socket."""
    secrets = known_secrets()
    env = {
        name: value
        for name, value in environment_to_pass_on(dict(os.environ)).items()
        if not SECRET_NAME.search(name)
        and name not in DAEMON_VARIABLES
        and not any(secret in value for secret in secrets)
    }
    env["TMPDIR"] = temp_dir
    return env


class CappedReader(threading.Thread):
    """Drains one pipe, keeping the first OUTPUT_CAP_BYTES and counting the rest."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.kept = bytearray()
        self.dropped = 0

    def run(self) -> None:
        while chunk := self.stream.read1(READ_CHUNK):
            room = OUTPUT_CAP_BYTES - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(len(chunk) - room, 0)

    def text(self) -> str:
        text = redact_text(self.kept.decode("utf-8", errors="replace"))
        return text + (f"\n……（另有 {self.dropped:,} 字节输出被截去）" if self.dropped else "")


def exec_command(params: ExecCommandParams, context: ToolContext) -> dict[str, Any]:
    plan_command(params.command)
    cwd = resolve(params.cwd)
    if not cwd.is_dir():
        raise ToolFailure(f"工作目录 {params.cwd} 不是文件夹。")
    sandbox = chosen_sandbox()
    exports_dir().mkdir(parents=True, exist_ok=True)
    temp_dir = tempfile.mkdtemp(prefix="wyckoff-exec-")
    try:
        with process_cgroup() as cgroup:
            argv = command_line(
                sandbox,
                ["/bin/bash", "--noprofile", "--norc", "-c", params.command],
                cwd=cwd,
                temp_dir=temp_dir,
                network=params.network,
                timeout_s=params.timeout_s,
                cgroup=cgroup,
            )
            env = child_environment("/tmp" if sandbox == BUBBLEWRAP else temp_dir)
            return _run(params, context, cwd, argv, env) | {"sandbox": sandbox}
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def _run(
    params: ExecCommandParams, context: ToolContext, cwd: Path, argv: list[str], env: dict
) -> dict:
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: a timeout kills every descendant
        umask=USER_UMASK,
    )
    readers = [CappedReader(process.stdout), CappedReader(process.stderr)]
    for reader in readers:
        reader.start()
    stopped = _wait(process, started + params.timeout_s, context)
    _kill_group(process.pid)  # also what it left running in the background
    for reader in readers:
        reader.join(timeout=2)
    result = {
        "command": params.command,
        "cwd": display(cwd),
        "exit_code": process.returncode,
        "network": params.network,
        "elapsed_s": round(time.monotonic() - started, 2),
        "stdout": readers[0].text(),
        "stderr": readers[1].text(),
    }
    if stopped:
        result["stopped"] = stopped
    return result


def _wait(process: subprocess.Popen, deadline: float, context: ToolContext) -> str | None:
    """Waits for the command; on timeout or cancel kills its process group and says why."""
    while True:
        try:
            process.wait(timeout=0.1)
            return None
        except subprocess.TimeoutExpired:
            pass
        reason = None
        if context.cancelled():
            reason = "已被取消，整个进程组已终止"
        elif time.monotonic() >= deadline:
            reason = "超时，整个进程组已终止"
        if reason:
            _kill_group(process.pid)
            process.wait()
            return reason


def _kill_group(pgid: int) -> None:
    """SIGKILL every process of the group and wait (up to GROUP_EXIT_WAIT_S) until none is
    left running: the signal is only queued, and a busy machine may take a moment to act on it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + GROUP_EXIT_WAIT_S
    while _group_running(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_running(pgid: int) -> bool:
    """Whether a process of the group is still alive (zombies waiting to be reaped are not)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # exited while we looked
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def summarize_command(data: dict[str, Any]) -> str:
    lines = len(data["stdout"].splitlines()) + len(data["stderr"].splitlines())
    stopped = f"，{data['stopped']}" if data.get("stopped") else ""
    return f"命令退出码 {data['exit_code']}，输出 {lines} 行{stopped}"


EXEC_COMMAND = ToolSpec(
    name="exec_command",
    description=(
        "在工作区内运行一条 shell 命令（bash 语法），需要用户批准。标准输入关闭，"
        "环境变量中不含密钥，默认 60 秒超时，默认不能联网（需要时设 network=true）；"
        "在沙箱里运行（bubblewrap 或 Landlock），只能写工作区和导出文件夹。"
        "结果含 exit_code、stdout、stderr。"
    ),
    params=ExecCommandParams,
    func=exec_command,
    title="运行命令",
    summarize=summarize_command,
    requires_approval=True,
    timeout_s=MAX_TIMEOUT_S + 30,
    describe=describe_command,
    reads_private=True,
)
