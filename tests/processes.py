"""Finding the processes a command started, by their command line: inside a sandbox's PID
namespace the command sees other pids than the host, so tests look for a unique command."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path


def eventually(condition: Callable[[], bool], timeout: float = 3.0) -> bool:
    """Whether `condition()` becomes true within `timeout` seconds (things end async)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def marked_sleep() -> str:
    """A sleep command whose argument no other test uses, to find it in /proc afterwards."""
    return f"sleep 300.{uuid.uuid4().int % 10**9}"


def running(command: str) -> list[int]:
    """The live processes (host pids) whose command line is `command`."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue
        if line == command and state not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


@contextlib.contextmanager
def killed_afterwards(command: str) -> Iterator[None]:
    """Whatever runs `command` when the block ends (a test that failed) is killed."""
    try:
        yield
    finally:
        for pid in running(command):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
