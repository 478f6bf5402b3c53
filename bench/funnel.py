"""Funnel and diagnosis speed on the demo market scaled to 5,500 stocks x 320 days.
Run: python bench/funnel.py  (builds the demo market in a temporary WYCKOFF_HOME)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.engine.funnel import run_funnel  # noqa: E402
from wyckoff.engine.health import diagnose  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402


def timed(func, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as home:
        started = time.perf_counter()
        store = ensure_demo(Path(home))
        build = time.perf_counter() - started
        load = timed(lambda: store.load_panel(320), repeat=3)
        panel = store.load_panel(320)
        funnel = timed(lambda: run_funnel(panel))
        codes = panel.codes[::50][:100]
        started = time.perf_counter()
        for code in codes:
            diagnose(panel, code, cost=10.0)
        per_diagnosis = (time.perf_counter() - started) / len(codes)
    stocks, days = len(panel.codes), len(panel.dates)
    print(f"demo market: {stocks} stocks x {days} days")
    print(f"  build demo store (once)        {build:7.2f} s")
    print(f"  store load (DuckDB -> panel)   {load:7.2f} s")
    print(f"  full funnel, layers 1-4        {funnel:7.3f} s")
    print(f"  one diagnosis                  {per_diagnosis * 1000:7.2f} ms")


if __name__ == "__main__":
    main()
