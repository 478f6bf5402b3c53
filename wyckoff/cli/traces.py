"""One JSONL trace per turn under `scratchpad/`, secrets redacted by key name and
by the value of every key the process knows.

Each line is written and flushed as it happens, so a crash mid-turn still leaves the
evidence of what the model and the tools did up to that point.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wyckoff.cli.output import local_now
from wyckoff.config import redact_value
from wyckoff.errors import UsageError

TRACES_DIR = "scratchpad"  # the folder keeps its first name: older traces stay listed
RESULT_PREVIEW_CHARS = 2_000


class TurnTrace:
    def __init__(self, home: Path, session_id: str | None) -> None:
        folder = home / TRACES_DIR
        folder.mkdir(parents=True, exist_ok=True)
        stamp = local_now().strftime("%Y%m%d-%H%M%S-%f")  # the user's wall clock, like `trace list`
        self.id = f"{stamp}_{(session_id or 'nosession')[:12]}"
        self.path = folder / f"{self.id}.jsonl"

    def record(self, kind: str, **fields: Any) -> None:
        entry = {"ts": local_now().isoformat(timespec="milliseconds"), "type": kind, **fields}
        line = json.dumps(redact_value(entry), ensure_ascii=False, default=str)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def tool_result(self, name: str, args: dict[str, Any], outcome, status: str) -> None:
        text = outcome.result if outcome.ok else outcome.shown_error
        self.record(
            "tool_result",
            name=name,
            args=args,
            status=status,
            elapsed_s=round(outcome.elapsed_s, 3),
            result=(text or "")[:RESULT_PREVIEW_CHARS],
            ref=outcome.ref,
            task_id=outcome.task_id,
        )


def list_traces(home: Path, limit: int = 20) -> list[dict[str, Any]]:
    """Newest traces first, with the question that started each."""
    folder = home / TRACES_DIR
    paths = sorted(folder.glob("*.jsonl"), reverse=True)[:limit] if folder.exists() else []
    traces = []
    for path in paths:
        entries = read_trace_file(path)
        first = entries[0] if entries else {}
        last = entries[-1] if entries else {}
        traces.append(
            {
                "id": path.stem,
                "session_id": first.get("session_id"),
                "input": str(first.get("user_input", ""))[:60],
                "status": last.get("status") if last.get("type") == "final" else last.get("type"),
                "events": len(entries),
            }
        )
    return traces


def read_trace(home: Path, trace_id: str) -> list[dict[str, Any]]:
    folder = home / TRACES_DIR
    matches = (
        sorted(folder.glob(f"{trace_id}*.jsonl")) if folder.exists() and "/" not in trace_id else []
    )
    if not matches:
        raise UsageError(f"没有找到追踪 {trace_id}：用 `wyckoff trace list` 查看已有的追踪。")
    return read_trace_file(matches[0])


def read_trace_file(path: Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            entries.append({"type": "unreadable", "line": line[:200]})
    return entries
