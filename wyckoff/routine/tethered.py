"""A scheduled step's process dies with the scheduler that started it. On Linux the kernel
sends the step SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG), even by kill -9, so a
killed `run-due` leaves no step running on behind its back (the next `run-due` records the
run as 运行中断). Other systems have no such call: there the step runs on to its end."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess` that ties the child to this process (Linux), else None.
    The kernel watches the thread that forks: call it from the thread that waits for the child."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not in the forked child
    parent = os.getpid()

    def tie() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the call: no signal would come
            os._exit(1)

    return tie
