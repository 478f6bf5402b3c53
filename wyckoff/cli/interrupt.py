"""Ctrl+C in a command: it always ends as "已取消。" and exit 130, whatever was running.

The first Ctrl+C raises `KeyboardInterrupt` and is remembered: DuckDB turns a Ctrl+C inside
a query into `RuntimeError("Query interrupted")`, which still means the user cancelled. A
further SIGINT (a second press, or one passed on again by a library) leaves at once. Once
the command is cancelling, SIGINT is ignored: CPython resets its own handler while the
process shuts down, and a SIGINT landing then ended the process with -2 after "已取消。"
(seen in about 1 of 30 interrupted `data use demo` runs on a loaded machine).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from wyckoff.cli.output import CANCELLED_EXIT, say_cancelled

_pressed: set[str] = set()  # {"ctrl-c"} once pressed (a set: reset per command in tests)


def install() -> None:
    """Handle Ctrl+C this way from now on (the main thread only)."""
    signal.signal(signal.SIGINT, _on_ctrl_c)


def pressed() -> bool:
    """Whether the user pressed Ctrl+C during this command."""
    return bool(_pressed)


def cancelling() -> None:
    """The command is ending because of Ctrl+C: say so, and let no SIGINT interrupt the exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    say_cancelled()


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    if _pressed:
        say_cancelled()
        sys.stderr.flush()
        os._exit(CANCELLED_EXIT)
    _pressed.add("ctrl-c")
    raise KeyboardInterrupt
