"""Which sandbox runs an approved command, and the command line that starts it there.

bubblewrap when `bwrap` is installed and can create namespaces: a fresh mount namespace
built from an allowlist (bwrap_mounts.py: the system's programs, the workspace and the
exports folder; nothing of the home, /var/tmp or /run, so no daemon's socket), with its own
PID, IPC and (unless the approval allows the network) network namespace, no capabilities,
killed with its parent (with the network shared, Landlock inside it scopes abstract sockets
and signals). Else Landlock (confine.py): writes confined, signals and abstract sockets
scoped, TCP refused; it reads everything and reaches path sockets. Else none. WYCKOFF_SANDBOX
(auto | bwrap | landlock | none) picks one. Every sandbox, even none, starts through
confine.py for the resource limits, and joins a process-count cgroup where one can be made.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from wyckoff.cli.local_tools.bwrap_mounts import CONFINE_SCRIPT, mount_arguments
from wyckoff.cli.local_tools.confine import ABI_SCOPES, landlock_abi
from wyckoff.cli.local_tools.workspace import exports_dir, workspace_root
from wyckoff.cli.tools import ToolFailure

SANDBOX_ENV = "WYCKOFF_SANDBOX"
BUBBLEWRAP, LANDLOCK, NONE = "bubblewrap", "landlock", "none"
CHOICES = {"bwrap": BUBBLEWRAP, "bubblewrap": BUBBLEWRAP, "landlock": LANDLOCK, "none": NONE}
CPU_MARGIN_S = 5  # CPU seconds per process beyond the command's timeout
MEMORY_BYTES = 4 * 1024**3  # address space per process
MAX_PROCESSES = 256
CGROUP_EMPTY_WAIT_S = 2.0
# The pids controller: cgroup v1's own hierarchy, else the unified (v2) one.
PIDS_HIERARCHIES = (("pids", "/sys/fs/cgroup/pids"), ("", "/sys/fs/cgroup"))
# The mounts and namespaces a real run needs; some containers forbid them.
BWRAP_PROBE: tuple[str, ...] = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
BWRAP_PROBE += ("--unshare-pid", "--unshare-ipc", "--unshare-net")


def bwrap_works() -> bool:
    """Whether bwrap is installed and can create the namespaces (some containers forbid it)."""
    path = shutil.which("bwrap")
    return bool(path) and _bwrap_starts(path)


@functools.cache
def _bwrap_starts(path: str) -> bool:
    try:
        probe = subprocess.run([path, *BWRAP_PROBE, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def chosen_sandbox() -> str:
    """The sandbox the next command runs in: WYCKOFF_SANDBOX's, or the best that works."""
    wanted = os.environ.get(SANDBOX_ENV, "").strip().lower() or "auto"
    if wanted == "auto":
        return BUBBLEWRAP if bwrap_works() else LANDLOCK if landlock_abi() >= 1 else NONE
    sandbox = CHOICES.get(wanted)
    if sandbox is None:
        raise ToolFailure(
            f"环境变量 {SANDBOX_ENV}={wanted} 无法识别：可选 auto、bwrap、landlock、none。"
        )
    if sandbox == BUBBLEWRAP and not bwrap_works():
        raise ToolFailure(
            f"{SANDBOX_ENV}=bwrap，但 bwrap 没有安装或无法创建命名空间：请安装 bubblewrap"
            f"（apt-get install bubblewrap），或设 {SANDBOX_ENV}=landlock。"
        )
    if sandbox == LANDLOCK and landlock_abi() < 1:
        raise ToolFailure(f"{SANDBOX_ENV}=landlock，但内核不支持 Landlock：请改用 bwrap。")
    return sandbox


def describe_sandbox(sandbox: str, network: bool) -> str:
    """What the sandbox confines, as the approval dialog says it."""
    net = "可以联网" if network else "不能联网"
    if sandbox == BUBBLEWRAP:
        return (
            "沙箱 bubblewrap：只看得到系统程序、工作区和导出文件夹，只能写后两者，"
            f"看不到家目录、Wyckoff 配置和密钥文件，{net}"
        )
    if sandbox == LANDLOCK:
        tcp = "可以联网" if network else "不能建立 TCP 连接"
        return f"沙箱 Landlock：只能写工作区和导出文件夹，但能读其他文件，{tcp}"
    return "无沙箱：命令能读写你能访问的一切、能联网"


def command_line(
    sandbox: str,
    program: list[str],
    *,
    cwd: Path,
    temp_dir: str,
    network: bool,
    timeout_s: int,
    cgroup: str | None,
) -> list[str]:
    """The argv that runs `program` under `sandbox`, through the limits of confine.py."""
    launcher = [sys.executable, "-I", "-S", str(CONFINE_SCRIPT)]
    launcher += ["--cpu", str(timeout_s + CPU_MARGIN_S), "--memory", str(MEMORY_BYTES)]
    launcher += ["--processes", str(MAX_PROCESSES)]
    if cgroup:
        launcher += ["--cgroup", cgroup]
    if sandbox == BUBBLEWRAP:
        bwrap = bwrap_arguments(cwd, temp_dir, network)
        if network and landlock_abi() >= ABI_SCOPES:
            # Sharing the network shares abstract Unix sockets (X11, some D-Bus buses):
            # inside bwrap, Landlock scopes them (writes are bwrap's business: "/" allowed).
            scope = [sys.executable, "-I", "-S", str(CONFINE_SCRIPT), "--landlock", "--write", "/"]
            program = [*scope, "--", *program]
        return [*launcher, "--", *bwrap, "--", *program]
    if sandbox == LANDLOCK:
        launcher.append("--landlock")
        if not network:
            launcher.append("--no-network")
        for folder in (workspace_root(), exports_dir(), temp_dir):
            launcher += ["--write", str(folder)]
    return [*launcher, "--", *program]


def bwrap_arguments(cwd: Path, temp_dir: str, network: bool) -> list[str]:
    """bwrap's mounts (bwrap_mounts.py) and namespaces."""
    args = [shutil.which("bwrap") or "bwrap", *mount_arguments(temp_dir, network)]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", str(cwd)]
    return args


@contextlib.contextmanager
def process_cgroup() -> Iterator[str | None]:
    """A fresh cgroup capping the process count (the only cap that also binds root), or None
    where none can be made; on exit every process left in it is killed and it is removed."""
    path = _make_cgroup()
    try:
        yield path
    finally:
        if path:
            _empty_and_remove(path)


def _make_cgroup() -> str | None:
    for controller, mount in PIDS_HIERARCHIES:
        base = _own_cgroup(controller, mount)
        if base is None:
            continue
        try:
            path = tempfile.mkdtemp(prefix="wyckoff-exec-", dir=base)
        except OSError:
            continue
        try:
            Path(path, "pids.max").write_text(str(MAX_PROCESSES))
        except OSError:
            os.rmdir(path)
            continue
        return path
    return None


def _own_cgroup(controller: str, mount: str) -> str | None:
    """This process's cgroup folder in the hierarchy that has `controller` ("" = v2)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, relative = line.split(":", 2)
            if controller in controllers.split(","):
                folder = mount + relative.rstrip("/")
                if os.path.exists(os.path.join(folder, "cgroup.procs")):
                    return folder
    return None


def _empty_and_remove(path: str) -> None:
    deadline = time.monotonic() + CGROUP_EMPTY_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            os.rmdir(path)
            return
        with contextlib.suppress(OSError):
            for pid in Path(path, "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.01)
