"""Reading the compaction archives under $WYCKOFF_HOME/context_archive/<session>/: the
messages a compaction cut (`<id>.jsonl`) and their metadata (`<id>.json`). Compaction writes
them; recall, the tools and the tests read them here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from wyckoff.errors import UsageError

ARCHIVE_DIR = "context_archive"


def restore_context_archive(home: Path, ref: str) -> list[dict[str, Any]]:
    match = re.fullmatch(r"archive://([\w-]+)/(ctx_[\w]+)", ref.strip())
    path = home / ARCHIVE_DIR / match.group(1) / f"{match.group(2)}.jsonl" if match else None
    if path is None or not path.is_file():
        raise UsageError(f"找不到归档 {ref}。")
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def search_archives(home: Path, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Archive metadata matching a code, keyword or text of the summary (newest first)."""
    folder = home / ARCHIVE_DIR
    hits = []
    for path in (
        sorted(folder.glob("*/*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if folder.exists()
        else []
    ):
        metadata = json.loads(path.read_text(encoding="utf-8"))
        haystack = " ".join(
            [metadata["summary"], *metadata["codes"], *metadata["keywords"], *metadata["paths"]]
        )
        if not query or query in haystack:
            hits.append(
                {k: metadata[k] for k in ("ref", "created_at", "summary", "codes", "keywords")}
            )
        if len(hits) >= limit:
            break
    return hits
