"""The synthetic demo market: built on first use, once, whoever asks first."""

from __future__ import annotations

from pathlib import Path

from wyckoff.engine.demo import BUILT_AT, build_demo_store
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.base import Progress


def ensure_demo(
    home: Path, progress: Progress | None = None, limit: int | None = None
) -> MarketStore:
    """The demo store, built (or rebuilt, when an earlier build was cut short) on first use.

    Processes that need it at the same time take turns: one builds, the others then find it.
    """
    import fcntl

    store = MarketStore.for_source(home, "demo")
    if demo_complete(store):
        return store
    home.mkdir(parents=True, exist_ok=True)
    with open(store.path.with_name(store.path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not demo_complete(store):
            build_demo_store(store.path, progress, limit)
    return store


def demo_complete(store: MarketStore) -> bool:
    """A demo store counts only when its build finished (it records `built_at` last)."""
    return store.path.exists() and store.get_state(BUILT_AT) is not None
