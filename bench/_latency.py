"""Query latency for the benchmarks: each query timed once after a warm-up call."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def query_latency(run: Callable[[str], object], queries: list[str]) -> str:
    """'p50 X ms, p95 Y ms, max Z ms' over the queries (the first is also run once to warm
    the caches)."""
    run(queries[0])
    times = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - started) * 1000)
    return percentiles(times)


def percentiles(samples: list[float]) -> str:
    """'p50 X ms, p95 Y ms, max Z ms' of samples in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"p50 {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms, max {ordered[-1]:.2f} ms"
