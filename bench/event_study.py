"""The event study's cost (`wyckoff research signals`): detection (the funnel on every signal
day) per day, outcomes for every event, wall / CPU / peak RSS; and the estimate for ten years
of the whole market (4,800 codes x 2,500 days) on two worker processes.
Goal: ten years of the whole market in minutes on two cores.
Run: python bench/event_study.py [--days N] [--big [--big-days N]]
(the demo market, built in a temporary folder; --big: also a synthetic 4,800 x 2,500 market,
timing N signal days of it and the outcomes of a full ten years of events)."""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.engine.event_study import Events, detect_events, measure  # noqa: E402
from wyckoff.engine.panel import Panel  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402
from wyckoff.engine.thresholds import DEFAULT_CONFIG  # noqa: E402

TEN_YEARS, WHOLE_MARKET, WORKERS = 2500, 4800, 2


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, work):
    wall, cpu = time.perf_counter(), cpu_s()
    value = work()
    wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
    print(f"  {label:<40} {wall:7.2f} s wall {cpu:7.2f} s CPU   peak RSS {peak_rss_mb():6.0f} MB")
    return value, cpu


def study(panel: Panel, days: int, label: str) -> None:
    """Detection over `days` signal days after one warm-up day (the panel-wide arrays the
    funnel computes once: relative volume, market activity), then their outcomes. The
    estimate is from CPU time: on a shared machine wall time measures the neighbours."""
    last = len(panel.dates) - 1
    timed("warm-up: one signal day", lambda: detect_events(panel, last - 61, last - 61))
    events, cpu = timed(
        f"detect {days} signal days",
        lambda: detect_events(panel, last - days - 61, last - 62, DEFAULT_CONFIG),
    )
    per_day = cpu / days
    timed(
        f"outcomes of {len(events.signal):,} events (5,20,60)",
        lambda: measure(panel, events, (5, 20, 60), DEFAULT_CONFIG),
    )
    scale = WHOLE_MARKET / panel.shape[1]
    estimate = per_day * TEN_YEARS * scale / WORKERS
    print(
        f"  {label}: {per_day * 1000:.0f} ms CPU per signal day -> ten years of the whole market "
        f"on {WORKERS} workers ≈ {estimate / 60:.1f} min of detection"
    )


def synthetic(days: int, stocks: int) -> Panel:
    """Random walks with volume, bars and the demo's stock list shape (no I/O)."""
    import pandas as pd

    rng = np.random.default_rng(1)
    close = 10 * np.cumprod(1 + rng.normal(0.0003, 0.02, (days, stocks)), axis=0)
    volume = rng.uniform(0.5e7, 1.5e7, (days, stocks))
    codes = [f"{600000 + j:06d}" for j in range(stocks)]
    frame = pd.DataFrame(
        {
            "name": [f"股票{j}" for j in range(stocks)],
            "industry": [f"行业{j % 30}" for j in range(stocks)],
            "board": "main",
            "is_st": False,
            "market_cap": 2e10,
            "list_date": "20000104",
        },
        index=codes,
    )
    dates = np.busday_offset("2014-01-02", np.arange(days), roll="forward").astype("datetime64[D]")
    index = 3000 * np.cumprod(1 + rng.normal(0.0002, 0.01, days))
    return Panel(
        dates, codes, np.vstack([close[:1], close[:-1]]), close * 1.01, close * 0.99, close,
        volume, close * volume, frame, {"000300.SH": index, "000001.SH": index}, "bench",
    )  # fmt: skip


def all_day_events(panel: Panel, per_day: int) -> Events:
    """`per_day` events on every day of the panel (the outcome step's worst case)."""
    rng = np.random.default_rng(2)
    days = len(panel.dates)
    columns = rng.integers(0, panel.shape[1], (days, per_day)).ravel()
    return Events(
        np.zeros(days * per_day, np.int8),
        np.repeat(panel.dates, per_day),
        np.array(panel.codes)[columns],
        panel.dates,
        np.zeros(days, np.int8),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--big-days", type=int, default=5)
    args = parser.parse_args()
    print(describe_machine())
    with tempfile.TemporaryDirectory() as home:
        store = ensure_demo(Path(home))
        panel, _ = timed("load the demo market", lambda: store.load_panel(800))
    print(f"demo market: {panel.shape[1]} stocks x {panel.shape[0]} days")
    study(panel, args.days, "demo")
    if args.big:
        del panel
        big, _ = timed(
            f"build a synthetic {WHOLE_MARKET} x {TEN_YEARS}",
            lambda: synthetic(TEN_YEARS, WHOLE_MARKET),
        )
        study(big, args.big_days, "synthetic")
        events = all_day_events(big, 200)
        timed(
            f"outcomes of {len(events.signal):,} events (ten years)",
            lambda: measure(big, events, (5, 20, 60), DEFAULT_CONFIG),
        )


if __name__ == "__main__":
    main()
