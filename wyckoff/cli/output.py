"""Terminal output shared by the direct commands: Rich tables on a TTY-friendly console,
plain JSON for scripts, and one-line errors on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")


def print_error(message: str) -> None:
    sys.stderr.write(f"错误：{message}\n")


def print_notice(message: str) -> None:
    sys.stderr.write(f"{message}\n")


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A Rich table (Rich imported only when a table is printed)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    Console().print(table)


def is_interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()
