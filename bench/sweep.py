"""A 64-combination sweep (4 engine configs x 16 exit combinations) on the demo market, three
ways: the naive way (one full backtest per combination), the sweep in one process (signals
once per engine config), and the sweep on a local Dask cluster of worker processes.

Run: python bench/sweep.py [--stocks 1000] [--days 120] [--workers 2]
(the full 5,500 stocks x 250 days takes ~20 s per backtest, so the naive way alone is
~20 minutes there; the defaults are a smaller slice of the same market)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyckoff.engine.backtest import run_backtest  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402
from wyckoff.engine.sweep import dask_client, metrics_of, run_sweep  # noqa: E402
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


def timed(work):
    started = time.perf_counter()
    value = work()
    return value, time.perf_counter() - started


def naive(panel, grid, start, end) -> list[dict]:
    return [
        metrics_of(run_backtest(panel, start, end, cfg=replace(DEFAULT_CONFIG, **engine), **exits))
        for engine in grid.engine_configs()
        for exits in grid.exit_combinations()
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stocks", type=int, default=1000)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        panel = ensure_demo(Path(home), limit=args.stocks).load_panel(args.days + 300)
    end = len(panel.dates) - 1
    start = end - args.days
    grid = parse_grid(GRID)
    print(
        f"sweep: {len(panel.codes)} stocks x {args.days} trade dates, {grid.size} combinations "
        f"({len(grid.engine_configs())} engine configs x {len(grid.exit_combinations())} exits)"
    )
    slow, naive_s = timed(lambda: naive(panel, grid, start, end))
    serial, serial_s = timed(lambda: run_sweep(panel, grid, start, end))

    def on_cluster():
        with dask_client(args.workers) as client:
            return timed(lambda: run_sweep(panel, grid, start, end, client=client))

    (cluster, sweep_s), cluster_s = timed(on_cluster)
    assert serial == cluster and sorted(map(str, slow)) == sorted(
        str(r["metrics"]) for r in serial["results"]
    ), "the three ways disagree"
    print(f"  naive (one full backtest each)  {naive_s:7.1f} s")
    print(f"  sweep, one process              {serial_s:7.1f} s  ({naive_s / serial_s:.1f}x)")
    print(
        f"  sweep, local cluster ({args.workers} procs)  {cluster_s:7.1f} s  "
        f"({naive_s / cluster_s:.1f}x, cluster start-up and shut-down included)"
    )
    print(f"    of which the sweep itself      {sweep_s:7.1f} s  ({naive_s / sweep_s:.1f}x)")


if __name__ == "__main__":
    main()
