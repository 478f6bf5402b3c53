"""The event study's per-signal records as saved beside the market store (one small JSON file
per store, written by engine/event_cache.py's `signal_records`), and their reader: light
enough for the commands that show a signal's record and must stay fast."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from wyckoff.engine.store_cache import CACHE_DIR
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig


def config_key(cfg: EngineConfig) -> str:
    text = json.dumps(asdict(cfg), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def records_path(store_path: Path) -> Path:
    return store_path.parent / CACHE_DIR / f"{store_path.stem}-event-records.json"


def stored_records(store_path: Path, cfg: EngineConfig = DEFAULT_CONFIG) -> dict[str, Any] | None:
    """The cached records as saved (`version`: the store version they were measured on,
    `records`) for this engine configuration, whatever the store's version now; None when
    there are none. Reads one small file: never loads the market."""
    try:
        saved = json.loads(records_path(store_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("config") != config_key(cfg):
        return None
    if not isinstance(saved.get("records"), dict):
        return None
    return saved
