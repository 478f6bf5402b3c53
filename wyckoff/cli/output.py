"""Terminal output shared by the direct commands: Rich tables on a TTY-friendly console,
plain JSON for scripts, and one-line errors on stderr."""

from __future__ import annotations

import json
import math
import os
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

CHINA_TIME = timezone(timedelta(hours=8), "CST")  # Asia/Shanghai has no daylight saving


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value, indent=2) + "\n")


def json_text(value: Any, indent: int | None = None) -> str:
    """`value` as JSON a strict parser accepts: NaN and ±Infinity are not JSON, so a
    non-finite number is written as null; other objects as their text."""
    return json.dumps(
        _finite(value), ensure_ascii=False, indent=indent, default=str, allow_nan=False
    )


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def print_error(message: str) -> None:
    sys.stderr.write(f"错误：{message}\n")


def print_notice(message: str) -> None:
    sys.stderr.write(f"{message}\n")


CANCELLED_EXIT = 130  # what a shell expects after Ctrl+C (Typer turns one into this code too)
_said_once: set[str] = set()  # sentences a process says at most once


def say_cancelled() -> None:
    """Tell the user the command stopped at their Ctrl+C, once per process."""
    if "cancelled" not in _said_once:
        _said_once.add("cancelled")
        sys.stderr.write("已取消。\n")


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A Rich table (Rich imported only when a table is printed)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")  # wrap long values, never cut them to "…"
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console = Console()
    if not console.is_terminal:  # a pipe or file has no width to fit: print every value whole
        console = Console(width=1000)
    console.print(table)


def is_interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def local_time(utc_stamp: str, *, seconds: bool = True) -> str:
    """A stored UTC timestamp ('2026-12-02T10:00:00.123Z') as local wall-clock time,
    '2026-12-02 18:00:00': the system zone, or China time when no zone is configured."""
    try:
        moment = datetime.fromisoformat(utc_stamp.replace("Z", "+00:00"))
    except ValueError:
        return utc_stamp
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    local = moment.astimezone(_display_zone())
    return local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def local_now() -> datetime:
    """Now, zone-aware, in the zone `local_time` shows."""
    return datetime.now(_display_zone()).astimezone(_display_zone())


def zone_name() -> str:
    """The zone times are shown in, as the user reads it: 北京时间, or 本地时间 UTC+01:00."""
    if _display_zone() is CHINA_TIME:
        return "北京时间"
    offset = datetime.now().astimezone().strftime("%z")
    return f"本地时间 UTC{offset[:3]}:{offset[3:]}"


def local_today() -> date:
    """The user's today, in the zone `local_time` shows: at 07:00 in Beijing on a UTC server
    it is already the next day, and a buy made this morning is not in the future."""
    return datetime.now(_display_zone()).date()


def _display_zone():
    """None (the system zone) when TZ is set or the system has a zone other than UTC."""
    if os.environ.get("TZ"):
        return None
    system = datetime.now().astimezone().tzinfo
    return CHINA_TIME if system is None or system.utcoffset(None) == timedelta(0) else None
