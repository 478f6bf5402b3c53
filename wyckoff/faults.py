"""Fault injection for the crash tests, at the commit boundaries the guarantees are about.

`crash_point("name")` kills the process (SIGKILL, as `kill -9` would) when the environment
variable WYCKOFF_CRASH_AT equals that name. Only the test suite sets it; it is not a user
setting and does nothing otherwise.
"""

from __future__ import annotations

import os
import signal

CRASH_VARIABLE = "WYCKOFF_CRASH_AT"


def crash_point(name: str) -> None:
    if os.environ.get(CRASH_VARIABLE) == name:
        os.kill(os.getpid(), signal.SIGKILL)
