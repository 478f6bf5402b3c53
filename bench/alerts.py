"""`alert check` speed: 200 rules over the whole demo market (5,500 stocks), warm (the panel
already loaded), in process: holdings and watchlist structure rules, single-stock price and
trigger rules, market-wide change and volume rules and the regime rule.
Run: python bench/alerts.py [--home DIR]  (without --home: builds the demo market in a
temporary WYCKOFF_HOME)."""

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

from bench.startup import wyckoff_command  # noqa: E402

HOLDINGS, WATCHED, PRICE_RULES, TRIGGER_RULES = 20, 30, 100, 52


def add_rules(store, codes: list[str]) -> int:
    from wyckoff import alert_store, portfolio_store, watchlist_store

    with store.transaction():
        for code in codes[:HOLDINGS]:
            position = {"code": code, "name": code, "shares": 100, "cost_price": 10.0}
            portfolio_store.write_position(store, {**position, "buy_dt": "20260105"})
        for code in codes[HOLDINGS : HOLDINGS + WATCHED]:
            watchlist_store.write(store, {"code": code, "name": code, "tags": [], "note": ""})
        rules = [("stop", "holdings"), ("exit", "holdings"), ("health-drop", "holdings")]
        rules += [("trigger", "holdings"), ("stop", "watchlist"), ("health-drop", "watchlist")]
        rules += [("trigger", "watchlist"), ("regime", "market")]
        rules += [("change", "market")] * 20 + [("volume", "market")] * 20
        rules += [("price", code) for code in codes[100 : 100 + PRICE_RULES]]
        rules += [("trigger", code) for code in codes[300 : 300 + TRIGGER_RULES]]
        for kind, scope in rules:
            direction = "above" if kind == "price" else None
            threshold = 10.0 if kind == "price" else None
            alert_store.add_rule(store, kind, scope, threshold, direction, 0)
    return len(rules)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", help="a WYCKOFF_HOME with the demo market built")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.home:
        run(Path(args.home), args.runs)
        return
    with tempfile.TemporaryDirectory(prefix="bench-alerts-") as home:
        run(Path(home), args.runs)


def run(home: Path, runs: int) -> None:
    os.environ["WYCKOFF_HOME"] = str(home)

    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.engine.sources.demo import ensure_demo
    from wyckoff.routine.alerts import check
    from wyckoff.store import Store

    ensure_demo(home)
    subprocess.run([*wyckoff_command(), "data", "use", "demo"], check=True, capture_output=True)
    store = Store(home / f"bench-alerts-{os.getpid()}.db")
    context = ToolContext(home=home, registry=default_registry(), store=store)
    from wyckoff.agents.market_data import MarketData

    codes = list(MarketData.from_context(context).panel().codes)
    count = add_rules(store, codes)
    started = time.perf_counter()
    first = check(context)
    cold = time.perf_counter() - started
    times, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        check(context)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    store.close()
    for path in home.glob(f"bench-alerts-{os.getpid()}.db*"):
        path.unlink()
    print(f"alert check: {count} rules over {len(codes)} stocks, {len(first['fired'])} alerts")
    print(f"  first check (panel from the disk cache): {cold:.2f} s")
    print(
        f"  warm check, median of {runs}: {statistics.median(times):.2f} s wall, "
        f"{statistics.median(cpu):.2f} s CPU (load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
