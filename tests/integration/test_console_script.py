"""The installed `wyckoff` script in a process of its own (most tests run commands in-process,
tests/cli_runner.py): help from its cache, exit codes, and the loopback guard in children."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import add_scripted_model, cli, cli_env
from tests.model_servers import Reply
from wyckoff.cli.app import COMMANDS

SCRIPT = shutil.which("wyckoff", path=str(Path(sys.executable).parent))


def run_script(*args: str) -> subprocess.CompletedProcess:
    assert SCRIPT, "the wyckoff console script is not installed"
    return subprocess.run(
        [SCRIPT, *args], capture_output=True, text=True, env=cli_env(), timeout=120
    )


def run_probe(program: str) -> subprocess.CompletedProcess:
    """A Python program (that runs a command through the launcher) in its own process."""
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=cli_env(), timeout=120
    )


def test_the_console_script_answers_help_from_its_cache_and_exits_with_its_codes(home):
    first = run_script("--help")
    assert first.returncode == 0 and "用法：wyckoff" in first.stdout and not first.stderr
    assert [p.name for p in (home / "cache").iterdir()][0].startswith("help-")
    again = run_script("--help")
    assert again.returncode == 0 and again.stdout == first.stdout
    refused = run_script("portfolio", "cash", "-1")
    assert refused.returncode == 2 and "现金不能为负数" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_command_in_its_own_process_is_behind_the_loopback_guard(home):
    probe = "import socket; socket.getaddrinfo('example.com', 443)"
    child = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=60
    )
    assert child.returncode == 1 and "NetworkBlocked: tests may not resolve" in child.stderr


def test_a_command_imports_only_its_own_module_and_help_still_lists_every_one(home):
    """`model rm` builds that one command: no other command module (ask's agent, the
    market's engine, ...) is imported to run it; `--help` still lists every command."""
    probe = (
        "import sys\nsys.argv = ['wyckoff', 'model', 'rm', 'none']\n"
        "from wyckoff.cli.launcher import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('wyckoff.cli.commands.')))"
    )
    child = run_probe(probe)
    imported = "['wyckoff.cli.commands.model', 'wyckoff.cli.commands.model_views']"
    assert child.stdout.splitlines()[-1] == imported, child.stderr
    listed = run_script("--help").stdout
    assert all(f"  {name} " in listed for name in COMMANDS)


def test_an_ask_process_ends_without_the_last_collections_and_keeps_its_memories(
    home, openai_server
):
    """`ask` freezes what is alive at exit (the interpreter's final garbage collections
    walked it for ~0.1 s CPU): the memory extracted at exit is still saved, and a command run
    inside a longer-lived process (the in-process runner) does not freeze its host."""
    add_scripted_model(openai_server)
    turn = [Reply(tool_calls=[("check_background_tasks", {})]), Reply(text="没有后台任务。")]
    openai_server.script(*turn, Reply(text="[偏好] 用户尾盘二次确认再买"))
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['wyckoff', 'ask', '有后台任务吗？我一般尾盘二次确认再买']\n"
        "from wyckoff.cli.launcher import main\nmain()\n"
    )
    child = run_probe(probe)
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines() == ["没有后台任务。", "frozen True"]
    listed = json.loads(cli("memory", "list", "--json").stdout)["memories"]
    assert [m["content"] for m in listed] == ["用户尾盘二次确认再买"]
    openai_server.script(Reply(text="好"))
    assert cli("ask", "你好").returncode == 0 and gc.get_freeze_count() == 0
