"""A command's process ends without the interpreter's last garbage collections.

At exit CPython collects garbage several times while it tears the modules down; after `ask`
each pass walks the ~240,000 objects the SDK, pydantic and the tools left alive, ~0.1 s of CPU
in all (as much as the rest of `ask`'s own work). Freezing them first (`gc.freeze`) leaves
them out of those passes; the process frees its memory as it ends anyway. Everything else
about the exit is unchanged: non-daemon threads (memory extraction) are joined and atexit
callbacks run before it, and objects freed by reference counting are finalized as before."""

from __future__ import annotations

import atexit
import gc
import threading


def skip_exit_collection() -> None:
    """Freeze the objects alive at the end of this process (call once the command runs)."""
    atexit.unregister(_freeze_if_ending)
    atexit.register(_freeze_if_ending)


def _freeze_if_ending() -> None:
    # The main thread is stopped only when the interpreter itself is ending: a command run
    # inside a longer-lived process (the tests' in-process runner) must not freeze its host.
    if not threading.main_thread().is_alive():
        gc.freeze()
