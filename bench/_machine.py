"""What a benchmark's figures stand beside: the machine's cores and load, and the floor of a
bare interpreter (`python -c pass`) in wall and CPU time. Every benchmark prints this line
first, so a figure from a busy shared machine says so."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

FLOOR_RUNS = 5


class Run(NamedTuple):
    wall_s: float
    cpu_s: float  # user + sys of the child and everything it waited for


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(argv: list[str], **options) -> tuple[subprocess.CompletedProcess, Run]:
    """One child process, waited for: its result, wall seconds and CPU seconds."""
    cpu_before, started = children_cpu_s(), time.perf_counter()
    result = subprocess.run(argv, **options)
    return result, Run(time.perf_counter() - started, children_cpu_s() - cpu_before)


def floor() -> Run:
    """Median wall and CPU seconds of `python -c pass`: what any command here costs at least."""
    runs = [run_child([sys.executable, "-c", "pass"])[1] for _ in range(FLOOR_RUNS)]
    return Run(statistics.median(r.wall_s for r in runs), statistics.median(r.cpu_s for r in runs))


def describe_machine() -> str:
    bare = floor()
    load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} cores, load {load} (1/5/15 min); bare `python -c pass` "
        f"{bare.wall_s * 1000:.0f} ms wall, {bare.cpu_s * 1000:.0f} ms CPU (median of {FLOOR_RUNS})"
    )
