"""The tail-session verdicts in a few Chinese lines: the push after a scheduled `wyckoff tail`
and the brief's 尾盘检查 section. One line per stock with its first reason (the full
reasons stay in `wyckoff tail history`)."""

from __future__ import annotations

from typing import Any

VERDICT_MARKS = {"可买": "🟢", "观察": "🟡", "放弃": "🔴", "持仓破位预警": "⛔", "无法检查": "⚪"}


def tail_line(row: dict[str, Any]) -> str:
    """`🟢 可买 600519 贵州茅台（自选）1688.00：reason` from a tail_check row or a stored check."""
    mark = VERDICT_MARKS.get(row["verdict"], "")
    price = "" if row.get("price") is None else f" {row['price']:.2f}"
    reason = f"：{row['reasons'][0]}" if row["reasons"] else ""
    return (
        f"{mark} {row['verdict']} {row['code']} {row.get('name') or ''}（{row['role']}）"
        f"{price}{reason}"
    )


def tail_message(result: dict[str, Any]) -> tuple[str, str]:
    """The push (title, Markdown text) of one `tail_check` result."""
    title = f"尾盘检查 {result['checked_at']}"
    lines = [f"## {title}", *[f"- {tail_line(row)}" for row in result["results"]]]
    if result.get("data_note"):
        lines.append(f"> ⚠ {result['data_note']}")
    return title, "\n".join(lines) + "\n"
