"""What an approved command sees of the file system inside bubblewrap, attacked from inside:
a real tmux server and plain Unix-socket listeners on paths the old sandbox left visible
(/var/tmp, the user's home, /dev/shm), a command rewriting the workspace's git hooks and
config, and the ordinary commands that must keep working. Real bwrap, real tmux, real git."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_local_tools import call, result
from tests.integration.test_sandbox import Listener, needs_bwrap
from tests.processes import eventually
from wyckoff.cli.local_tools.bwrap_mounts import launcher_paths


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace: a git repository with one commit, as a user's project is."""
    folder = tmp_path / "repo"
    folder.mkdir()
    monkeypatch.setenv("WYCKOFF_WORKSPACE", str(folder))
    monkeypatch.delenv("WYCKOFF_SANDBOX", raising=False)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / "notes.md").write_text("笔记\n")
    subprocess.run([*git, "add", "notes.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@contextlib.contextmanager
def socket_folder(base: Path) -> Iterator[Path]:
    """A fresh folder under `base` for a socket, removed afterwards."""
    folder = base / f"wyckoff-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def tmux_socket() -> Iterator[Path]:
    """A real tmux server the user runs on a socket under /var/tmp (not /tmp, not /run)."""
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed here")
    with socket_folder(Path("/var/tmp")) as folder:
        path = folder / "sock"
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_TMPDIR")}
        tmux = ["tmux", "-S", str(path), "-f", "/dev/null"]
        subprocess.run([*tmux, "new-session", "-d", "-s", "main", "sleep 600"], env=env, check=True)
        try:
            yield path
        finally:
            subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)


def send(path: Path) -> str:
    """A command that connects to the Unix socket `path` and sends a line."""
    program = f"s = socket.socket(socket.AF_UNIX); s.connect('{path}'); s.sendall(b'hello')"
    return f"python3 -c \"import socket; {program}; print('sent')\""


@needs_bwrap
def test_a_tmux_server_under_var_tmp_cannot_be_told_to_write_outside(
    home, repo, outside, tmux_socket, monkeypatch
):
    """Without the sandbox the server obeys (the attack is real); inside it, it is not there."""

    def tell_tmux(name: str) -> dict:
        command = f"tmux -S {tmux_socket} new-window -d 'touch {outside / name}'"
        return result(call(home, "exec_command", command=command))

    monkeypatch.setenv("WYCKOFF_SANDBOX", "none")
    tell_tmux("UNCONFINED")
    assert eventually((outside / "UNCONFINED").exists)
    monkeypatch.setenv("WYCKOFF_SANDBOX", "bwrap")
    outcome = tell_tmux("OUTSIDE")
    assert not eventually((outside / "OUTSIDE").exists, timeout=2)
    assert outcome["sandbox"] == "bubblewrap" and outcome["exit_code"] != 0


@pytest.mark.parametrize("base", ["/var/tmp", "home", "/dev/shm"])
@needs_bwrap
def test_a_unix_socket_listener_outside_receives_nothing(home, repo, monkeypatch, base):
    """A daemon's socket anywhere a socket can live: the listener is reachable without the
    sandbox (the attack is real) and receives nothing from inside it."""
    where = Path.home() if base == "home" else Path(base)
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not a folder this test can write")
    with socket_folder(where) as folder:
        listener = Listener(socket.AF_UNIX, str(folder / "sock"))
        try:
            monkeypatch.setenv("WYCKOFF_SANDBOX", "none")
            unconfined = result(call(home, "exec_command", command=send(folder / "sock")))
            assert unconfined["stdout"] == "sent\n"
            assert eventually(lambda: listener.received == b"hello")
            monkeypatch.setenv("WYCKOFF_SANDBOX", "bwrap")
            outcome = result(call(home, "exec_command", command=send(folder / "sock")))
            reached = eventually(lambda: listener.connections > 1, timeout=1)
        finally:
            listener.close()
    assert outcome["sandbox"] == "bubblewrap" and "sent" not in outcome["stdout"]
    assert not reached and listener.received == b"hello"  # only the unconfined command's


@needs_bwrap
def test_the_workspaces_git_hooks_and_config_cannot_be_rewritten(home, repo):
    git = repo / ".git"
    before = {path: path.read_bytes() for path in [git / "config", *(git / "hooks").iterdir()]}
    hook = "printf '#!/bin/sh\\ntouch /tmp/pwned\\n'"
    attempts = [
        f"{hook} > .git/hooks/pre-commit",
        "chmod +x .git/hooks/*.sample",
        "echo '[core]' >> .git/config",
        "git config core.hooksPath /tmp/evil",
        "rm -rf .git/hooks",
        "mv .git/config .git/config.old",
        "mv .git .git-old && mkdir -p .git/hooks",
    ]
    command = "; ".join(attempts) + "; echo done"
    outcome = result(call(home, "exec_command", command=command))
    assert outcome["stdout"] == "done\n"
    after = {path: path.read_bytes() for path in [git / "config", *(git / "hooks").iterdir()]}
    assert after == before and not (git / "hooks" / "pre-commit").exists()
    assert not (repo / ".git-old").exists()
    assert [path.stat().st_mode for path in after] == [path.stat().st_mode for path in before]


@needs_bwrap
def test_a_missing_hooks_folder_cannot_be_made(home, repo):
    shutil.rmtree(repo / ".git" / "hooks")
    command = "mkdir -p .git/hooks; echo 'touch /tmp/pwned' > .git/hooks/post-checkout; echo ok"
    outcome = result(call(home, "exec_command", command=command))
    assert outcome["stdout"] == "ok\n" and "Read-only file system" in outcome["stderr"]
    assert list((repo / ".git" / "hooks").iterdir()) == []  # the empty folder bwrap mounted on


@needs_bwrap
def test_hooks_in_the_folder_core_hooks_path_names_cannot_be_rewritten(home, repo):
    """husky and the like keep hooks in the work tree (core.hooksPath = .husky/_)."""
    hooks = repo / ".husky" / "_"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nnpm test\n")
    subprocess.run(["git", "-C", str(repo), "config", "core.hooksPath", ".husky/_"], check=True)
    command = "echo 'touch /tmp/pwned' >> .husky/_/pre-commit; echo x > .husky/_/pre-push; echo ok"
    outcome = result(call(home, "exec_command", command=command))
    assert outcome["stdout"] == "ok\n" and "Read-only file system" in outcome["stderr"]
    assert [path.name for path in hooks.iterdir()] == ["pre-commit"]
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nnpm test\n"


@needs_bwrap
def test_ordinary_commands_still_work(home, repo):
    """Python, git in the workspace, reading /usr, the user's name and the time zone, writing
    the workspace, the exports folder and /tmp."""
    export = home / "exports" / "report.csv"
    steps = [
        "python3 -c 'print(6 * 7)'",
        "git status --short",
        "git log --format=%s",
        "grep -c . /usr/lib/os-release > /dev/null && echo usr",
        "id -un",
        "date +%Z",
        "echo made > made.txt",
        f"echo code > {export}",
        "echo scratch > /tmp/scratch && cat /tmp/scratch",
        "git status --short",
    ]
    outcome = result(call(home, "exec_command", command=" && ".join(steps)))
    assert outcome["exit_code"] == 0, outcome["stderr"]
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    zone = subprocess.run(["date", "+%Z"], capture_output=True, text=True).stdout.strip()
    assert outcome["stdout"].splitlines() == [
        "42", "first", "usr", user, zone, "scratch", "?? made.txt"
    ]  # fmt: skip
    assert (repo / "made.txt").read_text() == "made\n" and export.read_text() == "code\n"


@needs_bwrap
def test_with_the_network_names_resolve_and_certificates_load(home, repo):
    """/etc/hosts, nsswitch.conf and resolv.conf, and the CA certificates, are there."""
    server = Listener(socket.AF_INET, ("127.0.0.1", 0))
    program = (
        f"import socket, ssl; socket.create_connection(('localhost', {server.port}), timeout=3); "
        "print('connected', ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)"
    )
    try:
        command = f'python3 -c "{program}"'
        outcome = result(call(home, "exec_command", command=command, network=True))
        assert outcome["stdout"] == "connected True\n", outcome["stderr"]
        assert eventually(lambda: server.connections == 1)
    finally:
        server.close()


@needs_bwrap
def test_only_the_allowed_folders_are_visible(home, repo):
    """At the top only the system's folders and the ways to the workspace and the
    interpreter; the places a socket can live are empty; /etc holds only what programs need."""
    command = "ls -A /; echo --; ls -A /var/tmp /run /dev/shm; echo --; ls /etc; cat /etc/shadow"
    outcome = result(call(home, "exec_command", command=command))
    top, sockets, etc = (part.split() for part in outcome["stdout"].split("--\n"))
    shown = [repo, home, *map(Path, launcher_paths())]
    system = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}
    assert set(top) <= system | {"tmp", "var", "run"} | {path.parts[1] for path in shown}
    assert not set(top) & {"srv", "mnt", "media", "opt", "boot", "sys"}
    assert sockets == ["/dev/shm:", "/run:", "/var/tmp:"]
    assert "passwd" in etc and not {"shadow", "gshadow", "sudoers", "ssh"} & set(etc)
    assert "/etc/shadow: No such file" in outcome["stderr"]


@needs_bwrap
def test_the_users_home_is_empty_but_for_the_interpreter(home, repo):
    listing = result(call(home, "exec_command", command=f"ls -A {Path.home()}"))["stdout"]
    home_real = Path(os.path.realpath(Path.home()))
    inside = [Path(path) for path in launcher_paths() if Path(path).is_relative_to(home_real)]
    assert set(listing.split()) == {path.relative_to(home_real).parts[0] for path in inside}
