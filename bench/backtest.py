"""A 250-day point-in-time backtest on the demo market (5,500 stocks).
Run: python bench/backtest.py"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.engine.backtest import run_backtest  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402


def main() -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as home:
        panel = ensure_demo(Path(home)).load_panel(520)
    end = len(panel.dates) - 1
    started = time.perf_counter()
    result = run_backtest(panel, end - 250, end)
    elapsed = time.perf_counter() - started
    print(f"backtest: {len(panel.codes)} stocks, 250 trade dates, {result['trades']} trades")
    print(
        f"  wall time                      {elapsed:7.1f} s  ({elapsed / 250 * 1000:.0f} ms per date)"
    )


if __name__ == "__main__":
    main()
