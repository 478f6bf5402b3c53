"""Wall time, CPU time and peak memory of warm `wyckoff analyze 600519` and `wyckoff screen` on the full
demo market (5,539 stocks), as a user runs them: a new process each time, the panel cache
already written by an earlier run. Run: python bench/warm_commands.py [--runs N] [--home DIR]
(without --home the demo market is built in a temporary WYCKOFF_HOME first)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from bench.startup import wyckoff_command  # noqa: E402

COMMANDS = {"analyze 600519": ["analyze", "600519"], "screen": ["screen"]}


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys) and the peak resident memory (MiB) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(home: str, runs: int) -> None:
    env = {**os.environ, "WYCKOFF_HOME": home}
    wyckoff = wyckoff_command()
    subprocess.run([*wyckoff, "data", "use", "demo"], env=env, capture_output=True, check=True)
    print(f"warm commands on the demo market, median of {runs} runs")
    for name, args in COMMANDS.items():
        subprocess.run([*wyckoff, *args], env=env, capture_output=True, check=True)  # warm
        samples = [run([*wyckoff, *args], env) for _ in range(runs)]
        seconds = statistics.median(s for s, _, _ in samples)
        cpu = statistics.median(c for _, c, _ in samples)
        peak = max(m for _, _, m in samples)
        print(
            f"  wyckoff {name:<16} wall {seconds:6.2f} s   CPU {cpu:6.2f} s   peak {peak:6.0f} MiB"
        )


def main() -> None:
    print(describe_machine())
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--home", help="a WYCKOFF_HOME that already holds the demo market")
    options = parser.parse_args()
    if options.home:
        measure(options.home, options.runs)
        return
    with tempfile.TemporaryDirectory() as home:
        measure(home, options.runs)


if __name__ == "__main__":
    main()
