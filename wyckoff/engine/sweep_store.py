"""Past sweeps, kept in their own DuckDB file in the Wyckoff home (apart from the market
store, which market reads open read-only)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS sweep_ids;
CREATE TABLE IF NOT EXISTS sweeps (
    id BIGINT PRIMARY KEY DEFAULT nextval('sweep_ids'),
    created_at TIMESTAMP NOT NULL,
    source VARCHAR NOT NULL,
    start_date VARCHAR NOT NULL,
    end_date VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    walk_forward VARCHAR,
    combinations INTEGER NOT NULL,
    best_params VARCHAR NOT NULL,
    result VARCHAR NOT NULL
);
"""


def sweeps_path(home: Path) -> Path:
    return Path(home) / "sweeps.duckdb"


def _connect(home: Path):
    import duckdb

    conn = duckdb.connect(str(sweeps_path(home)))
    conn.execute(SCHEMA)
    return conn


def best_params(result: dict[str, Any]) -> dict[str, Any]:
    """The top-ranked combination, or for a walk-forward the last fold's choice."""
    return result["folds"][-1]["params"] if "folds" in result else result["results"][0]["params"]


def save_sweep(home: Path, result: dict[str, Any]) -> int:
    walk = result.get("walk_forward")
    with _connect(home) as conn:
        row = conn.execute(
            "INSERT INTO sweeps (created_at, source, start_date, end_date, metric, walk_forward, "
            "combinations, best_params, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [
                datetime.now(),
                result.get("source", ""),
                result["period"]["start"],
                result["period"]["end"],
                result["metric"],
                f"{walk['train_days']}:{walk['test_days']}" if walk else None,
                result["combinations"],
                json.dumps(best_params(result), ensure_ascii=False),
                json.dumps(result, ensure_ascii=False),
            ],
        ).fetchone()
    return int(row[0])


def list_sweeps(home: Path, limit: int = 20) -> list[dict[str, Any]]:
    if not sweeps_path(home).exists():
        return []
    with _connect(home) as conn:
        cursor = conn.execute(
            "SELECT id, created_at, source, start_date, end_date, metric, walk_forward, "
            "combinations, best_params FROM sweeps ORDER BY id DESC LIMIT ?",
            [limit],
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        row["created_at"] = row["created_at"].isoformat(timespec="seconds")
        row["best_params"] = json.loads(row["best_params"])
    return rows
