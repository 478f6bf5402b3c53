"""Copies kept beside the market store, one per version of the store file (its size and
modification time): any sync makes a new one. A copy is written to a temporary folder and
renamed into place, so a reader never sees half of it, and deleting it loses nothing.

The store's open days are one such copy, kept as text (one ISO date a line) so that the
system prompt of every `ask` reads its market clock without importing numpy or DuckDB.
Loaded panels are another (engine/panel_cache.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import TypeVar

CACHE_DIR = "panel-cache"
OPEN_DAYS_FILE = "open_days.txt"
T = TypeVar("T")


def cached_open_days(store_path: Path, load: Callable[[], Iterable[object]]) -> list[date]:
    """The store's open days, oldest first, for this version of the store: from the cache
    when it has one (a damaged copy counts as none), else from `load()` (days whose str() is
    ISO) and then cached."""
    folder = store_path.parent / CACHE_DIR / f"{store_path.stem}-open-days"
    path = folder / OPEN_DAYS_FILE
    return cached(
        store_path,
        folder,
        lambda: _iso_days(path.read_text(encoding="utf-8")),
        lambda: [date.fromisoformat(str(day)) for day in load()],
        lambda staging, days: (staging / OPEN_DAYS_FILE).write_text(
            "\n".join(day.isoformat() for day in days), encoding="utf-8"
        ),
    )


def _iso_days(text: str) -> list[date]:
    return [date.fromisoformat(day) for day in text.split()]


def cached(
    store_path: Path,
    folder: Path,
    read: Callable[[], T],
    load: Callable[[], T],
    write: Callable[[Path, T], object],
) -> T:
    """`read()` from `folder` when it holds this version of the store, else `load()` and
    write it there for the next run."""
    version = store_version(store_path)
    value = _read(folder, version, read)
    if value is None:
        value = load()
        if store_version(store_path) == version:  # not changed (synced, built) meanwhile
            write_copy(folder, version, lambda staging: write(staging, value))
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


def write_copy(folder: Path, version: str, write_files: Callable[[Path], object]) -> None:
    """`folder` written whole by `write_files(staging)` and renamed into place. Best effort: a cache that cannot be written (disk full, read-only home) is skipped."""
    staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    try:
        staging.mkdir(parents=True, exist_ok=True)
        write_files(staging)
        (staging / "version").write_text(version, encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
