"""A loaded panel kept on disk beside the market store, one per store version and window,
and the store's open days (one copy per store version).

Reading 5,539 stocks from DuckDB and pivoting them into a Panel takes about a second and
~400 MB. The cached arrays are memory-mapped instead, so a diagnosis touches one stock's
column plus the few rows of closes its RPS ranking reads, and a screen reads the arrays from
the page cache. A cache belongs to one version of the store file (its size and modification
time): any sync makes a new one. It is written to a temporary folder and renamed into place,
so a reader never sees half of it, and it is only a copy: deleting it loses nothing. With both
copies a warm `screen` or `analyze` never opens DuckDB (importing and opening it costs ~0.1 s).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from wyckoff.engine.panel import BAR_FIELDS, DAILY_FIELDS, Panel
from wyckoff.engine.stock_list import StockList

ARRAYS = BAR_FIELDS + DAILY_FIELDS  # every (days, stocks) array a Panel holds

CACHE_DIR = "panel-cache"
T = TypeVar("T")


def cached_panel(store_path: Path, source: str, days: int, load: Callable[[], Panel]) -> Panel:
    """The panel of `days` trading days for this version of the store: from the cache when
    it has one, else from `load()` (then cached for the next run)."""
    folder = store_path.parent / CACHE_DIR / f"{store_path.stem}-{days}"
    return _cached(store_path, folder, lambda: read_panel(folder, source), load, write_panel)


def cached_open_days(store_path: Path, load: Callable[[], np.ndarray]) -> np.ndarray:
    """The store's open days (datetime64[D]) for this version of the store: from the cache
    when it has one, else from `load()` (then cached for the next run)."""
    folder = store_path.parent / CACHE_DIR / f"{store_path.stem}-open-days"
    return _cached(
        store_path,
        folder,
        lambda: np.load(folder / "open_days.npy"),
        load,
        lambda staging, days: np.save(staging / "open_days.npy", days),
    )


def _cached(
    store_path: Path,
    folder: Path,
    read: Callable[[], T],
    load: Callable[[], T],
    write: Callable[[Path, T], None],
) -> T:
    version = store_version(store_path)
    value = _read(folder, version, read)
    if value is None:
        value = load()
        if store_version(store_path) == version:  # not changed (synced, built) meanwhile
            _write(folder, version, lambda staging: write(staging, value))
    return value


def store_version(store_path: Path) -> str:
    stat = store_path.stat()
    return f"{stat.st_size}-{stat.st_mtime_ns}"


def _version_of(folder: Path) -> str | None:
    try:
        return (folder / "version").read_text(encoding="utf-8")
    except OSError:
        return None


def _read(folder: Path, version: str, read: Callable[[], T]) -> T | None:
    if _version_of(folder) != version:
        return None
    try:
        value = read()
    except (OSError, ValueError):
        return None
    if _version_of(folder) != version:  # another process replaced it meanwhile
        return None
    return value


def read_panel(folder: Path, source: str) -> Panel:
    """The panel `write_panel` wrote to `folder`, its arrays memory-mapped."""
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS}
    index = np.load(folder / "index_close.npy", mmap_mode="r")
    dates = np.load(folder / "dates.npy")
    activity = np.load(folder / "market_activity.npy")
    return Panel(
        dates,
        meta["codes"],
        **arrays,
        stock_list=StockList(meta["codes"], meta["stocks"], meta["stock_dtypes"]),
        index_close=dict(zip(meta["indices"], index, strict=True)),
        source=source,
        caveats=meta["caveats"],
        market_activity=activity,
    )


def _write(folder: Path, version: str, write_files: Callable[[Path], None]) -> None:
    """Best effort: a cache that cannot be written (disk full, read-only home) is skipped."""
    staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    try:
        staging.mkdir(parents=True, exist_ok=True)
        write_files(staging)
        (staging / "version").write_text(version, encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def write_panel(staging: Path, panel: Panel) -> None:
    """Every array and fact of `panel` as files in the folder `staging`."""
    for name in ARRAYS:
        np.save(staging / f"{name}.npy", np.ascontiguousarray(getattr(panel, name)))
    np.save(staging / "dates.npy", panel.dates)
    np.save(staging / "market_activity.npy", panel.activity())  # reads every volume: once
    indices = sorted(panel.index_close)
    rows = [panel.index_close[code] for code in indices]
    np.save(staging / "index_close.npy", np.array(rows).reshape(len(rows), len(panel.dates)))
    stocks = panel.stocks.reset_index(drop=True)
    meta = {
        "codes": list(panel.codes),
        "indices": indices,
        "stocks": {column: stocks[column].tolist() for column in stocks.columns},
        "stock_dtypes": {column: str(dtype) for column, dtype in stocks.dtypes.items()},
        "caveats": panel.caveats,
    }
    (staging / "meta.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
