"""The installed `wyckoff` script in a process of its own (most tests run commands in-process,
tests/cli_runner.py): help from its cache, exit codes, and the loopback guard in children."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import cli_env
from wyckoff.cli.app import COMMANDS

SCRIPT = shutil.which("wyckoff", path=str(Path(sys.executable).parent))


def run_script(*args: str) -> subprocess.CompletedProcess:
    assert SCRIPT, "the wyckoff console script is not installed"
    return subprocess.run(
        [SCRIPT, *args], capture_output=True, text=True, env=cli_env(), timeout=120
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
    child = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=120
    )
    imported = "['wyckoff.cli.commands.model', 'wyckoff.cli.commands.model_views']"
    assert child.stdout.splitlines()[-1] == imported, child.stderr
    listed = run_script("--help").stdout
    assert all(f"  {name} " in listed for name in COMMANDS)
