"""`wyckoff ARGS` run inside the test process, through the console script's own entry point.

A fresh interpreter per command cost most of the suite's time, so `cli` runs
`wyckoff.cli.launcher.main` here instead, and gives the run what a new process would have:
empty standard streams that are not terminals, its own argv, environment, umask and
SIGINT handler, none of the per-process caches, its non-daemon threads joined and its
atexit callbacks run at the end. Everything is put back afterwards, so no state leaks
from one command to the next. Tests about processes themselves (Ctrl+C, kill -9, several
processes on one home, the console script) keep using real subprocesses (conftest.py).
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

# Module-level state a new process starts without: (module, attribute) of a dict or a set.
PER_PROCESS_STATE = (
    ("wyckoff.config", "_remembered_secrets"),
    ("wyckoff.mcp.client", "_CONNECTED"),
    ("wyckoff.agents.market_data", "_PANELS"),
    ("wyckoff.cli.output", "_said_once"),
    ("wyckoff.cli.interrupt", "_pressed"),
    ("wyckoff.cli.blas_threads", "_set_here"),
)


@dataclass(frozen=True)
class CliResult:
    """What `subprocess.run(..., capture_output=True, text=True)` would have returned."""

    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, input_text: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run `wyckoff ARGS` as a user would, in the test's WYCKOFF_HOME (with `env` added)."""
    assert "WYCKOFF_CRASH_AT" not in (env or {}), "a crash kills its process: use cli_process"
    stdin = _text_stream(io.BytesIO((input_text or "").encode()))
    stdout, stderr = _text_stream(io.BytesIO()), _text_stream(io.BytesIO())
    with ExitStack() as stack:
        stack.enter_context(_environment(env or {}))
        stack.enter_context(_process_globals(["wyckoff", *args], stdin, stdout, stderr))
        stack.enter_context(_fresh_module_state())
        stack.enter_context(_exit_like_a_process())
        returncode = _run_main()
    return CliResult(returncode, _captured(stdout), _captured(stderr))


def _run_main() -> int:
    from wyckoff.cli.launcher import main

    try:
        main()
    except SystemExit as exc:
        return _exit_status(exc.code)
    except Exception:  # what an uncaught exception does to a process
        traceback.print_exc()
        return 1
    return 0


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


class _Pipe(io.TextIOWrapper):
    """A command's standard stream, like a pipe's under PYTHONIOENCODING=utf-8."""


def _text_stream(raw: io.BytesIO) -> io.TextIOWrapper:
    return _Pipe(raw, encoding="utf-8", write_through=True)


def _captured(stream: io.TextIOWrapper) -> str:
    """Decoded as `text=True` would: UTF-8 with universal newlines."""
    stream.flush()
    data = stream.buffer.getvalue()
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).read()


@contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    """The test's environment plus `extra`; whatever the command set is dropped afterwards."""
    saved = dict(os.environ)
    os.environ.update({"PYTHONIOENCODING": "utf-8", **extra})
    time.tzset()  # TZ may be among them
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        time.tzset()


@contextmanager
def _process_globals(argv: list[str], stdin, stdout, stderr) -> Iterator[None]:
    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr
    umask = os.umask(0o022)
    sigint = signal.getsignal(signal.SIGINT)
    handlers = _log_handlers_onto({sys.stderr: stderr, sys.stdout: stdout})
    sys.argv, sys.stdin, sys.stdout, sys.stderr = argv, stdin, stdout, stderr
    try:
        yield
    finally:
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
        os.umask(umask)
        signal.signal(signal.SIGINT, sigint)
        for handler, stream in handlers:
            handler.setStream(stream)


def _log_handlers_onto(streams: dict) -> list[tuple[logging.StreamHandler, object]]:
    """Point logging handlers that write to the standard streams (libraries such as distributed
    add them at import) at the command's streams, as they would be in its own process; returns
    the handlers moved from the test's streams, with those streams. Handlers made during an
    earlier command still hold its streams: they move too."""
    streams = {**streams, sys.__stderr__: streams[sys.stderr], sys.__stdout__: streams[sys.stdout]}
    moved = []
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if type(handler) is not logging.StreamHandler:
                continue
            stream = handler.stream
            if any(stream is ours for ours in streams.values()):
                continue
            if isinstance(stream, _Pipe):  # left by an earlier command: stderr, most likely
                handler.setStream(streams[sys.stderr])
            elif stream in streams:
                moved.append((handler, handler.setStream(streams[stream])))
    return moved


@contextmanager
def _fresh_module_state() -> Iterator[None]:
    saved = {}
    for module_name, attribute in PER_PROCESS_STATE:
        if module_name in sys.modules:
            state = getattr(sys.modules[module_name], attribute)
            saved[module_name, attribute] = state.copy()
            state.clear()
    try:
        yield
    finally:
        for module_name, attribute in PER_PROCESS_STATE:
            if module_name in sys.modules:
                state = getattr(sys.modules[module_name], attribute)
                state.clear()
                state.update(saved.get((module_name, attribute), ()))


@contextmanager
def _exit_like_a_process() -> Iterator[None]:
    """At the end: join the command's non-daemon threads, run its atexit callbacks and
    release its session locks, as a process does when it exits."""
    from wyckoff.cli import chat_log

    before = set(threading.enumerate())
    held_before = set(chat_log._HELD)
    callbacks: list[tuple[Callable[..., object], tuple, dict]] = []
    register, unregister = atexit.register, atexit.unregister

    def remember(func, *args, **kwargs):
        callbacks.append((func, args, kwargs))
        return func

    def forget(func) -> None:
        callbacks[:] = [c for c in callbacks if c[0] != func]

    atexit.register, atexit.unregister = remember, forget
    try:
        yield
    finally:
        for thread in set(threading.enumerate()) - before:
            if not thread.daemon:
                thread.join(timeout=120)  # a thread that never ends would hang its process
                assert not thread.is_alive(), f"the command left thread {thread.name} running"
        atexit.register, atexit.unregister = register, unregister
        for func, args, kwargs in reversed(callbacks):
            func(*args, **kwargs)
        for session_id in set(chat_log._HELD) - held_before:
            chat_log._HELD.pop(session_id).handle.close()  # an flock goes with its file
