"""A 64-combination sweep (4 engine configs x 16 exit combinations) on the demo market, by
default the whole market over a year as `wyckoff backtest sweep` runs it: the naive way (one
full backtest per combination; one combination per engine config is timed and the figure
scaled to all 64, as every combination of a config costs the same), the sweep in one process
(signals once per engine config), and the sweep on 2, 4 and 8 Dask worker processes: a
LocalCluster up to the machine's cores, beyond that a scheduler and workers started as local
processes and reached with --cluster, as a user's own cluster would be. Wall and CPU seconds
(user + sys of this process and its workers), with the cluster's start-up and shut-down, and
the sweep alone on the running cluster beside it.

Run: python bench/sweep.py [--stocks 5539] [--days 250] [--workers 2,4,8] [--no-naive]"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.engine.backtest import run_backtest  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402
from wyckoff.engine.sweep import (  # noqa: E402
    dask_client,
    local_cores,
    metrics_of,
    run_sweep,
    signals_task,
)
from wyckoff.engine.sweep_grid import parse_grid  # noqa: E402
from wyckoff.engine.thresholds import DEFAULT_CONFIG  # noqa: E402

GRID = {
    "rs10_min": [1.0, 2.0],
    "rs3_min": [0.5, 1.0],
    "hold_days": [5, 10],
    "stop_loss_pct": [6.0, 8.0],
    "take_profit_pct": [15.0, 20.0],
    "trailing": [True, False],
}
# What `wyckoff.engine.sweep.WORKER_DASK_CONFIG` does for a LocalCluster, as the dask config
# file of a cluster started by hand (docs/development.md says so to users of --cluster).
WORKER_CONFIG_YAML = """distributed:
  nanny:
    pre-spawn-environ:
      MALLOC_TRIM_THRESHOLD_: null
"""


def cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """The value, wall seconds and CPU seconds of work()."""
    wall, cpu = time.perf_counter(), cpu_s()
    value = work()
    return value, time.perf_counter() - wall, cpu_s() - cpu


def naive(panel, grid, start, end) -> list[dict]:
    """One full backtest for the first exit combination of each engine config."""
    exits = grid.exit_combinations()[0]
    return [
        metrics_of(run_backtest(panel, start, end, cfg=replace(DEFAULT_CONFIG, **engine), **exits))
        for engine in grid.engine_configs()
    ]


@contextmanager
def local_processes_cluster(workers: int) -> Iterator[Any]:
    """A scheduler and `workers` single-threaded worker processes on loopback, started as a
    user would start their own cluster, and a client of it."""
    with tempfile.TemporaryDirectory() as config_dir:
        Path(config_dir, "wyckoff.yaml").write_text(WORKER_CONFIG_YAML)
        env = {**os.environ, "DASK_CONFIG": config_dir}
        scheduler_file = Path(config_dir, "scheduler.json")
        dask = Path(sys.executable).with_name("dask")
        quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        scheduler = subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
             "127.0.0.1:0", "--scheduler-file", scheduler_file],
            **quiet,
        )  # fmt: skip
        pool = None
        try:
            while not scheduler_file.exists():
                time.sleep(0.1)
            pool = subprocess.Popen(
                [dask, "worker", "--scheduler-file", scheduler_file, "--nworkers", str(workers),
                 "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                **quiet,
            )  # fmt: skip
            from distributed import Client

            with Client(scheduler_file=str(scheduler_file)) as client:
                client.wait_for_workers(workers)
                yield client
        finally:
            for process in (pool, scheduler):
                if process is not None:
                    process.terminate()
                    process.wait()


def signals_cpu_s(panel, start: int, end: int) -> float:
    """CPU seconds of one engine config's signals, in the process that runs this."""
    started = time.process_time()
    signals_task(panel, start, end, True, {})
    return time.process_time() - started


def worker_vs_process(panel, start: int, end: int) -> str:
    """The same signal task in this process and in a worker: Dask's MALLOC_TRIM_THRESHOLD_
    once made the worker's twice as slow; a figure load on the machine does not change."""
    here = signals_cpu_s(panel, start, end)
    with dask_client(1) as client:
        shared = client.scatter(panel, broadcast=True)
        there = client.submit(signals_cpu_s, shared, start, end, pure=False).result()
    return f"one config's signals: CPU {here:.2f} s in this process, {there:.2f} s in a worker"


def on_workers(workers: int, sweep: Callable[[Any], dict]) -> tuple[dict, float, float, float]:
    """The sweep on a cluster of `workers` processes: its result, wall and CPU seconds with
    the cluster's start-up and shut-down, and wall seconds of the sweep alone."""
    alone = []

    def run() -> dict:
        cluster = dask_client(workers) if workers <= local_cores() else None
        with cluster or local_processes_cluster(workers) as client:
            result, wall, _ = timed(lambda: sweep(client))
        alone.append(wall)
        return result

    result, wall, cpu = timed(run)
    return result, wall, cpu, alone[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stocks", type=int, default=5539)
    parser.add_argument("--days", type=int, default=250)
    parser.add_argument("--workers", default="2,4,8", help="worker counts, comma-separated")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive way (slow)")
    args = parser.parse_args()
    print(describe_machine())
    with tempfile.TemporaryDirectory() as home:
        panel = ensure_demo(Path(home), limit=args.stocks).load_panel(args.days + 300)
    end = len(panel.dates) - 1
    start = end - args.days
    grid = parse_grid(GRID)
    print(
        f"sweep: {len(panel.codes)} stocks x {args.days} trade dates, {grid.size} combinations "
        f"({len(grid.engine_configs())} engine configs x {len(grid.exit_combinations())} exits)"
    )
    print(f"  {'':46} {'wall':>7} {'CPU':>7}  speed-up (wall) over one process")
    serial, serial_wall, serial_cpu = timed(lambda: run_sweep(panel, grid, start, end))
    if not args.no_naive:
        slow, naive_wall, naive_cpu = timed(lambda: naive(panel, grid, start, end))
        assert all(str(row) in map(str, (r["metrics"] for r in serial["results"])) for row in slow)
        scale = grid.size / len(slow)
        print(
            f"  {f'naive (one full backtest each; {len(slow)} timed)':46} "
            f"{naive_wall * scale:6.1f}s {naive_cpu * scale:6.1f}s  "
            f"(the sweep in one process is {naive_wall * scale / serial_wall:.1f}x faster)"
        )
    print(f"  {'sweep, one process':46} {serial_wall:6.1f}s {serial_cpu:6.1f}s  1.00x")
    for workers in (int(n) for n in args.workers.split(",")):
        kind = "local cluster" if workers <= local_cores() else "--cluster of local procs"
        result, wall, cpu, alone = on_workers(
            workers, lambda client: run_sweep(panel, grid, start, end, client=client)
        )
        assert result == serial, "the cluster and one process disagree"
        print(
            f"  {f'sweep, {kind} ({workers} workers)':46} {wall:6.1f}s {cpu:6.1f}s  "
            f"{serial_wall / wall:.2f}x ({serial_wall / alone:.2f}x on the running cluster)"
        )
    print(
        "  (cluster figures include its start-up and shut-down, the figure in brackets the sweep"
        " alone; results identical to one process)"
    )
    print(f"  {worker_vs_process(panel, start, end)}")


if __name__ == "__main__":
    main()
