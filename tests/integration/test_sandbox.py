"""The command sandbox attacked from inside an approved command: daemons outside it (a real
tmux server, a Unix-socket daemon standing in for D-Bus or Docker), the user's other
processes, setsid children, fork and memory floods, the keys and state next to the
workspace, chmod outside, the network. Real bwrap, real Landlock, real processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_local_tools import call, describe, key_file_example, result
from tests.processes import eventually, killed_afterwards, marked_sleep, running
from wyckoff.cli.local_tools.key_files import KEY_FILES
from wyckoff.cli.local_tools.sandbox import MAX_PROCESSES, bwrap_works, process_cgroup

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bwrap is not installed here")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    monkeypatch.setenv("WYCKOFF_WORKSPACE", str(folder))
    monkeypatch.delenv("WYCKOFF_SANDBOX", raising=False)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WYCKOFF_SANDBOX", "landlock")


class Listener:
    """A daemon's socket (Unix or TCP on loopback) that records who connects and what they send."""

    def __init__(self, family: int, address) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connections = 0
        self.received = b""
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    while data := conn.recv(4096):
                        self.received += data

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def close(self) -> None:
        self.stopped = True
        self.sock.close()


@pytest.fixture
def unix_daemon(outside: Path) -> Iterator[Listener]:
    listener = Listener(socket.AF_UNIX, str(outside / "docker.sock"))
    yield listener
    listener.close()


@pytest.fixture
def tcp_server() -> Iterator[Listener]:
    listener = Listener(socket.AF_INET, ("127.0.0.1", 0))
    yield listener
    listener.close()


def connect(address: str) -> str:
    """A command that connects to `address` (a socket path or host:port) with Python."""
    if ":" in address:
        host, port = address.rsplit(":", 1)
        target = f"socket.create_connection(('{host}', {port}), timeout=3)"
    else:
        target = f"socket.socket(socket.AF_UNIX).connect('{address}')"
    return f"python3 -c \"import socket; {target}; print('connected')\""


@pytest.fixture
def tmux_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real tmux server on a private socket, as if wyckoff had been started inside it."""
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed here")
    name = f"wyckoff-test-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_TMPDIR")}
    tmux = ["tmux", "-L", name, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "main", "sleep 600"], env=env, check=True)
    path = subprocess.run(
        [*tmux, "display-message", "-p", "#{socket_path}"], env=env, capture_output=True, text=True
    ).stdout.strip()
    monkeypatch.delenv("TMUX_TMPDIR", raising=False)
    monkeypatch.setenv("TMUX", f"{path},1,0")
    yield name
    subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)


# --- bubblewrap ---------------------------------------------------------------------------------


@needs_bwrap
def test_a_tmux_server_outside_the_sandbox_cannot_be_told_to_write_outside(
    home, ws, outside, tmux_server
):
    escaped = outside / "from-tmux"
    command = (
        f"tmux -L {tmux_server} new-window -d 'echo X > {escaped}'; "
        f"tmux new-window -d 'echo Y >> {escaped}'"
    )
    outcome = result(call(home, "exec_command", command=command))
    assert not eventually(escaped.exists, timeout=2)
    assert outcome["sandbox"] == "bubblewrap" and outcome["exit_code"] != 0


@needs_bwrap
def test_a_daemon_socket_outside_the_sandbox_is_unreachable(
    home, ws, unix_daemon, outside, monkeypatch
):
    path = outside / "docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={path}")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(path))
    outcome = result(call(home, "exec_command", command=f"env; {connect(str(path))}"))
    assert "connected" not in outcome["stdout"] and unix_daemon.connections == 0
    for name in ("DOCKER_HOST", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "TMUX"):
        assert f"{name}=" not in outcome["stdout"]


@needs_bwrap
def test_the_users_other_processes_cannot_be_signalled(home, ws):
    sibling = subprocess.Popen(["sleep", "300"])
    try:
        outcome = result(call(home, "exec_command", command=f"kill -9 {sibling.pid}"))
        assert sibling.poll() is None and outcome["exit_code"] != 0
    finally:
        sibling.kill()
        sibling.wait()


def cgroup_available() -> bool:
    with process_cgroup() as cgroup:
        return cgroup is not None


@pytest.mark.parametrize("sandbox", ["bwrap", "landlock"])
def test_a_setsid_child_is_gone_when_the_command_ends(home, ws, monkeypatch, sandbox):
    """bwrap: its PID namespace ends with the command; Landlock: the pids cgroup is emptied."""
    if sandbox == "bwrap" and not bwrap_works():
        pytest.skip("bwrap is not installed here")
    if sandbox == "landlock" and not cgroup_available():
        pytest.skip("no pids cgroup can be made here")
    monkeypatch.setenv("WYCKOFF_SANDBOX", sandbox)
    sleeper = marked_sleep()
    with killed_afterwards(sleeper):
        command = f"setsid {sleeper} > /dev/null 2>&1 < /dev/null & sleep 0.2"
        outcome = result(call(home, "exec_command", command=command))
        assert eventually(lambda: not running(sleeper)) and outcome["exit_code"] == 0


def fork_flood(count: int) -> str:
    program = (
        "import os, time\\n"
        "made = 0\\n"
        "try:\\n"
        f"    for _ in range({count}):\\n"
        "        if os.fork() == 0:\\n"
        "            time.sleep(60)\\n"
        "            os._exit(0)\\n"
        "        made += 1\\n"
        "except OSError as exc:\\n"
        '    print("refused after", made)\\n'
    )
    return f"printf '{program}' > flood.py && python3 flood.py"


@pytest.mark.parametrize("sandbox", ["bwrap", "landlock"])
def test_a_fork_flood_is_stopped_at_the_process_cap(home, ws, monkeypatch, sandbox):
    """RLIMIT_NPROC stops it for a user; root ignores that limit, the pids cgroup does not."""
    if sandbox == "bwrap" and not bwrap_works():
        pytest.skip("bwrap is not installed here")
    if os.getuid() == 0 and not cgroup_available():
        pytest.skip("as root only a pids cgroup caps processes, and none can be made here")
    monkeypatch.setenv("WYCKOFF_SANDBOX", sandbox)
    outcome = result(call(home, "exec_command", command=fork_flood(3 * MAX_PROCESSES)))
    made = int(outcome["stdout"].split("refused after")[1])
    assert made < MAX_PROCESSES


@needs_bwrap
def test_a_huge_memory_map_is_refused(home, ws):
    command = "python3 -c 'import mmap; mmap.mmap(-1, 16 * 1024**3); print(\"mapped\")'"
    outcome = result(call(home, "exec_command", command=command))
    assert "mapped" not in outcome["stdout"] and "Cannot allocate memory" in outcome["stderr"]


@needs_bwrap
def test_the_wyckoff_config_and_key_files_are_invisible_even_in_a_home_workspace(
    home, ws, monkeypatch
):
    """Started in ~ (the workspace is the home folder, WYCKOFF_HOME inside it)."""
    monkeypatch.setenv("HOME", str(ws))
    state = ws / ".wyckoff"
    monkeypatch.setenv("WYCKOFF_HOME", str(state))
    (state / "exports").mkdir(parents=True)
    (state / "wyckoff.json").write_text('{"api_key": "sk-saved-0123456789"}')
    secrets = {key_file_example(entry): f"SECRET-{n}-" for n, entry in enumerate(KEY_FILES)}
    for name, text in secrets.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    command = f"cat {state}/wyckoff.json {' '.join(secrets)}; echo a > .wyckoff/exports/a.csv"
    outcome = result(call(home, "exec_command", command=command))
    for text in ("sk-saved", *secrets.values()):
        assert text not in outcome["stdout"]
    assert (state / "exports" / "a.csv").read_text() == "a\n"
    assert (ws / ".git-credentials").read_text() == secrets[".git-credentials"]  # not harmed


@needs_bwrap
def test_a_dangling_link_named_like_a_key_does_not_stop_commands(home, ws):
    (ws / "deploy.key").symlink_to(ws / "missing")
    outcome = result(call(home, "exec_command", command="echo ok"))
    assert outcome["stdout"] == "ok\n" and outcome["exit_code"] == 0


@needs_bwrap
def test_chmod_and_touch_outside_the_workspace_fail(home, ws, outside):
    (home / "exports").mkdir(parents=True)  # exec_command makes it: home's mtime stays
    target = outside / "report.txt"
    target.write_text("x")
    before = [path.stat() for path in (home, outside, target)]
    command = f"chmod 0777 {home} {outside}; chmod 0666 {target}; touch -d 2000-01-01 {target}"
    outcome = result(call(home, "exec_command", command=command))
    after = [path.stat() for path in (home, outside, target)]
    assert [(s.st_mode, s.st_mtime) for s in after] == [(s.st_mode, s.st_mtime) for s in before]
    assert outcome["exit_code"] != 0


@needs_bwrap
def test_the_network_is_refused_unless_the_approval_allows_it(home, ws, tcp_server):
    address = f"127.0.0.1:{tcp_server.port}"
    assert "不能联网" in describe(home, "exec_command", command=connect(address))
    refused = result(call(home, "exec_command", command=connect(address)))
    assert "ConnectionRefusedError" in refused["stderr"]  # it ran, in a network of its own
    assert "connected" not in refused["stdout"] and tcp_server.connections == 0
    assert "可以联网" in describe(home, "exec_command", command=connect(address), network=True)
    allowed = result(call(home, "exec_command", command=connect(address), network=True))
    assert "connected" in allowed["stdout"] and eventually(lambda: tcp_server.connections == 1)


@needs_bwrap
def test_the_approval_names_the_sandbox_that_will_run_the_command(home, ws, monkeypatch):
    assert "沙箱 bubblewrap" in describe(home, "exec_command", command="ls")
    monkeypatch.setenv("WYCKOFF_SANDBOX", "landlock")
    assert "沙箱 Landlock" in describe(home, "exec_command", command="ls")
    monkeypatch.setenv("WYCKOFF_SANDBOX", "none")
    assert "无沙箱" in describe(home, "exec_command", command="ls")


def test_without_bwrap_on_the_path_the_command_falls_back_to_landlock(home, ws, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "沙箱 Landlock" in describe(home, "exec_command", command="ls")
    monkeypatch.setenv("WYCKOFF_SANDBOX", "bwrap")
    refused = call(home, "exec_command", command="touch made.txt")
    assert not refused.ok and "bubblewrap" in refused.error and not (ws / "made.txt").exists()


def test_an_unknown_sandbox_setting_is_one_sentence_and_runs_nothing(home, ws, monkeypatch):
    monkeypatch.setenv("WYCKOFF_SANDBOX", "docker")
    outcome = call(home, "exec_command", command="touch made.txt")
    assert not outcome.ok and "WYCKOFF_SANDBOX=docker 无法识别" in outcome.error
    assert "不会执行" in describe(home, "exec_command", command="touch made.txt")
    assert not (ws / "made.txt").exists()


# --- the Landlock fallback ------------------------------------------------------------------------


def test_landlock_confines_writes_signals_and_tcp(home, ws, outside, landlock, tcp_server):
    sibling = subprocess.Popen(["sleep", "300"])
    address = f"127.0.0.1:{tcp_server.port}"
    command = (
        f"echo in > inside.txt; echo out > {outside}/escaped.txt; kill -9 {sibling.pid}; "
        f"{connect(address)}; echo done"
    )
    try:
        outcome = result(call(home, "exec_command", command=command))
        assert outcome["sandbox"] == "landlock" and outcome["stdout"].endswith("done\n")
        assert (ws / "inside.txt").read_text() == "in\n"
        assert not (outside / "escaped.txt").exists() and sibling.poll() is None
        assert "connected" not in outcome["stdout"] and tcp_server.connections == 0
    finally:
        sibling.kill()
        sibling.wait()


@pytest.mark.parametrize(
    ("sandbox", "network"),
    [("landlock", False), ("landlock", True), ("bwrap", False), ("bwrap", True)],
)
def test_abstract_unix_sockets_outside_are_unreachable(home, ws, monkeypatch, sandbox, network):
    """Abstract sockets (X11, some D-Bus buses) have no file to hide: Landlock scopes them,
    also inside bwrap when the network namespace is shared."""
    if sandbox == "bwrap" and not bwrap_works():
        pytest.skip("bwrap is not installed here")
    monkeypatch.setenv("WYCKOFF_SANDBOX", sandbox)
    name = f"\0wyckoff-test-{uuid.uuid4().hex[:8]}"
    listener = Listener(socket.AF_UNIX, name)
    try:
        command = connect(name.replace("\0", "\\0"))
        outcome = result(call(home, "exec_command", command=command, network=network))
        assert "connected" not in outcome["stdout"] and listener.connections == 0
    finally:
        listener.close()


@needs_bwrap
def test_commands_start_when_wyckoff_itself_is_installed_under_tmp(home, ws, tmp_path):
    """A checkout or virtualenv in /tmp (CI does this) stays runnable inside the sandbox,
    whose /tmp is private: the launcher runs again in there, networked or not."""
    venv = Path("/tmp") / f"wyckoff-venv-{os.getpid()}"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        script = (
            "import os, sys; sys.path.insert(0, os.environ['WYCKOFF_SRC']);"
            "from tests.integration.test_local_tools import call, result;"
            "from pathlib import Path;"
            "home = Path(os.environ['WYCKOFF_HOME']);"
            "print([result(call(home, 'exec_command', command='echo ok', network=n))['stdout']"
            " for n in (False, True)])"
        )
        env = {**os.environ, "WYCKOFF_SRC": str(Path(__file__).parents[2])}
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        ran = subprocess.run(
            [str(venv / "bin" / "python"), "-c", script],
            cwd=ws, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    assert ran.stdout.strip() == "['ok\\n', 'ok\\n']", ran.stderr[-500:]
