"""The event study's events kept beside the market store and extended as days arrive (see
engine/store_cache.py for how such copies are kept), and the per-signal records section 2
reads, one per store version.

Detecting events (the funnel on every signal day) is the costly part; outcomes are cheap and
are measured again on every run, so an event whose horizon was not complete last time is
completed by the new days. The events are reused while the days they were found on are the
same: the same first day of the panel (the warm-up every indicator starts from), the same
engine configuration, and every stock's traded amounts (unadjusted, so a new ex-date does
not change them) unchanged up to the last day computed; otherwise they are computed anew.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from wyckoff.engine.event_records import config_key, records_path, stored_records
from wyckoff.engine.event_study import Events, detect_events, measure, summarize
from wyckoff.engine.panel import Panel
from wyckoff.engine.store_cache import CACHE_DIR, store_version, write_copy
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig

EVENTS_FILE, META_FILE, RECORDS_FILE = "events.npz", "meta.json", "records.json"
DEFAULT_HORIZONS = (5, 20, 60)
# (panel, day ranges (start_t, end_t inclusive), cfg) -> the events of those days
Detector = Callable[[Panel, list[tuple[int, int]], EngineConfig], Events]
DaysDone = Callable[[int, int], None]  # (signal days detected, of how many)
STAGE = "逐日检测信号"
MIN_CHUNK = 10  # days: a shorter task costs more to ship than it saves


def cache_folder(store_path: Path) -> Path:
    return store_path.parent / CACHE_DIR / f"{store_path.stem}-event-study"


def in_process(progress: DaysDone | None = None) -> Detector:
    """Detection in this process, day after day."""

    def detect(p: Panel, ranges: list[tuple[int, int]], cfg: EngineConfig) -> Events:
        total, parts = _days(ranges), list[Events]()
        for start, end in ranges:
            done = sum(part.days.size for part in parts)
            tick = (
                None
                if progress is None
                else lambda t, s=start, d=done: progress(d + t - s + 1, total)
            )
            parts.append(detect_events(p, start, end, cfg, tick))
        return Events.joined(parts)

    return detect


def on_cluster(client: Any, progress: DaysDone | None = None) -> Detector:
    """Detection as Dask tasks of consecutive days (the client is the user's choice, or a
    local cluster: engine/sweep.py), the panel shared with the workers as a sweep shares it."""
    from wyckoff.engine.sweep import TASKS_PER_WORKER, ClusterRunner, Tally, worker_slots

    def detect(p: Panel, ranges: list[tuple[int, int]], cfg: EngineConfig) -> Events:
        chunks = split_days(ranges, TASKS_PER_WORKER * worker_slots(client))
        total = _days(ranges)
        report = (
            None
            if progress is None
            else lambda _s, _d, _t, share: progress(round(share * total), total)
        )
        tally = Tally({STAGE: len(chunks)}, total, report)
        runner = ClusterRunner(client, tally, lambda: False)
        with runner.shared(p) as shared:
            futures = [
                runner.submit(STAGE, end - start + 1, detect_task, shared, start, end, cfg)
                for start, end in chunks
            ]
            return Events.joined(runner.results(futures))

    return detect


def detect_task(panel: Any, start_t: int, end_t: int, cfg: EngineConfig) -> Events:
    """One cluster task: the events of days start_t..end_t (a worker imports it by name)."""
    from wyckoff.engine.sweep import opened

    return detect_events(opened(panel), start_t, end_t, cfg)


def split_days(ranges: list[tuple[int, int]], pieces: int) -> list[tuple[int, int]]:
    """The day ranges cut into about `pieces` consecutive chunks of MIN_CHUNK days or more."""
    size = max(MIN_CHUNK, -(-_days(ranges) // max(pieces, 1)))
    return [
        (first, min(first + size - 1, end))
        for start, end in ranges
        for first in range(start, end + 1, size)
    ]


def _days(ranges: list[tuple[int, int]]) -> int:
    return sum(end - start + 1 for start, end in ranges)


def cached_events(
    store_path: Path,
    p: Panel,
    start_t: int,
    end_t: int,
    cfg: EngineConfig = DEFAULT_CONFIG,
    detect: Detector | None = None,
) -> tuple[Events, dict[str, int]]:
    """The events of signal days start_t..end_t: those cached for this panel reused, the
    missing days computed by `detect` and cached. Also how many days were reused and
    computed."""
    folder = cache_folder(store_path)
    cached = _read(folder, p, cfg)
    if cached is None or not len(cached.days):
        ranges = [(start_t, end_t)]
        kept = Events.empty()
    else:
        first, last = (int(np.searchsorted(p.dates, day)) for day in cached.days[[0, -1]])
        ranges = [(start_t, first - 1), (last + 1, end_t)]
        kept = cached
    ranges = [(a, b) for a, b in ranges if a <= b]
    events = kept
    if ranges:
        events = Events.joined([kept, (detect or in_process())(p, ranges, cfg)])
        version = store_version(store_path)
        write_copy(folder, version, lambda staging: _write(staging, p, cfg, events))
    selected = events.between(p.dates[start_t], p.dates[end_t])
    reused = int(np.isin(selected.days, kept.days).sum())
    return selected, {"days_computed": sum(b - a + 1 for a, b in ranges), "days_reused": reused}


def _amounts(p: Panel, last_t: int) -> tuple[np.ndarray, np.ndarray]:
    """Per stock: traded amount summed and bars counted over days 0..last_t."""
    amount = p.amount[: last_t + 1]
    return np.nansum(amount, axis=0), np.count_nonzero(~np.isnan(amount), axis=0)


def _write(staging: Path, p: Panel, cfg: EngineConfig, events: Events) -> None:
    last_t = int(np.searchsorted(p.dates, events.days[-1])) if len(events.days) else -1
    sums, counts = _amounts(p, last_t)
    np.savez(
        staging / EVENTS_FILE,
        signal=events.signal,
        date=events.date,
        code=events.code.astype("U6"),
        days=events.days,
        regimes=events.regimes,
        fingerprint_codes=np.array(p.codes, dtype="U6"),
        amount_sums=sums,
        bar_counts=counts,
    )
    meta = {"config": config_key(cfg), "first_day": str(p.dates[0])}
    (staging / META_FILE).write_text(json.dumps(meta), encoding="utf-8")


def _read(folder: Path, p: Panel, cfg: EngineConfig) -> Events | None:
    """The cached events when they were found on the data this panel holds, else None."""
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        with np.load(folder / EVENTS_FILE) as saved:
            stored = {name: saved[name] for name in saved.files}
    except (OSError, ValueError, KeyError):
        return None
    if meta.get("config") != config_key(cfg) or meta.get("first_day") != str(p.dates[0]):
        return None
    events = Events(*(stored[name] for name in ("signal", "date", "code", "days", "regimes")))
    if not len(events.days):
        return events
    if events.days[-1] > p.dates[-1]:  # the store lost days: start again
        return None
    last_t = int(np.searchsorted(p.dates, events.days[-1]))
    if not _same_history(p, last_t, stored):
        return None
    return events


def _same_history(p: Panel, last_t: int, stored: dict[str, np.ndarray]) -> bool:
    sums, counts = _amounts(p, last_t)
    position = {code: j for j, code in enumerate(p.codes)}
    known = np.array([position.get(str(code), -1) for code in stored["fingerprint_codes"]])
    if (known < 0).any() and stored["bar_counts"][known < 0].any():
        return False  # a stock that had bars then is gone
    new = np.ones(len(p.codes), dtype=bool)
    new[known[known >= 0]] = False
    if counts[new].any():  # a stock that has bars up to then now, and had none
        return False
    mine = known >= 0
    return bool(
        np.array_equal(counts[known[mine]], stored["bar_counts"][mine])
        and np.allclose(sums[known[mine]], stored["amount_sums"][mine], rtol=1e-9, atol=0)
    )


def signal_records(
    store_path: Path,
    load_panel: Callable[[], Panel],
    start_t: Callable[[Panel], int],
    cfg: EngineConfig = DEFAULT_CONFIG,
    detect: Detector | None = None,
) -> dict[str, Any]:
    """Every signal's record over the whole stored history (DEFAULT_HORIZONS), for this
    version of the store: read when cached, else computed (the events incrementally) and
    cached. `start_t(panel)` is the first signal day (after the warm-up)."""
    path = records_path(store_path)
    version = store_version(store_path)
    saved = stored_records(store_path, cfg)
    if saved is not None and saved["version"] == version:
        records: dict[str, Any] = saved["records"]
        return records
    p = load_panel()
    first = start_t(p)
    events, _ = cached_events(store_path, p, first, len(p.dates) - 1, cfg, detect)
    outcomes = measure(p, events, DEFAULT_HORIZONS, cfg)
    records = {
        "start": str(p.dates[first]),
        "end": str(p.dates[-1]),
        "years": round((len(p.dates) - first) / 244, 1),
        "signal_days": len(p.dates) - first,
        "signals": summarize(events, outcomes, cfg),
    }
    staging = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"version": version, "config": config_key(cfg), "records": records}
        staging.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
        os.replace(staging, path)
    except OSError:
        staging.unlink(missing_ok=True)
    return records
