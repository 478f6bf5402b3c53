"""A command that loads numpy starts no OpenBLAS threads to spin beside it (cli/blas_threads.py),
and the commands it runs for the user get the user's own setting."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import cli_env

THREADS_AFTER = (
    "import os, sys\nsys.argv = ['wyckoff', *sys.argv[1:]]\n"
    "from wyckoff.cli.launcher import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "print('numpy' in sys.modules, len(os.listdir('/proc/self/task')))"
)
PASSED_ON = (
    "import os\nfrom wyckoff.cli import blas_threads\n"
    "from wyckoff.cli.local_tools.shell import child_environment\n"
    "blas_threads.use_one_thread()\n"
    "print(os.environ.get('OPENBLAS_NUM_THREADS'), "
    "child_environment('/tmp').get('OPENBLAS_NUM_THREADS'))"
)


def python(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=cli_env(env), timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def test_analyze_loads_numpy_and_leaves_no_thread_but_its_own(demo_home):
    assert python("-c", THREADS_AFTER, "analyze", "600519") == "True 1"


def test_the_users_own_blas_setting_wins_and_reaches_the_commands_run_for_them(home):
    assert python("-c", PASSED_ON) == "1 None"  # ours, for this process only
    assert python("-c", PASSED_ON, env={"OPENBLAS_NUM_THREADS": "3"}) == "3 3"
