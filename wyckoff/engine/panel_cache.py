"""A loaded panel kept on disk beside the market store, one per store version and window
(see engine/store_cache.py for how such copies are kept).

Reading 5,539 stocks from DuckDB and pivoting them into a Panel takes about a second and
~400 MB. The cached arrays are memory-mapped instead, so a diagnosis touches one stock's
column plus the few rows of closes its RPS ranking reads, and a screen reads the arrays from
the page cache. With the panel and the open days (store_cache.py) cached, a warm `screen` or
`analyze` never opens DuckDB (importing and opening it costs ~0.1 s).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from wyckoff.engine.panel import BAR_FIELDS, DAILY_FIELDS, Panel
from wyckoff.engine.stock_list import StockList
from wyckoff.engine.store_cache import CACHE_DIR, cached

ARRAYS = BAR_FIELDS + DAILY_FIELDS  # every (days, stocks) array a Panel holds


def cached_panel(store_path: Path, source: str, days: int, load: Callable[[], Panel]) -> Panel:
    """The panel of `days` trading days for this version of the store: from the cache when
    it has one, else from `load()` (then cached for the next run)."""
    folder = store_path.parent / CACHE_DIR / f"{store_path.stem}-{days}"
    return cached(store_path, folder, lambda: read_panel(folder, source), load, write_panel)


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
