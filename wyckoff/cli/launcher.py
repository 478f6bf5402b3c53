"""The console entry point. `wyckoff --help` is answered from a cached copy of Typer's own
help text, so it does not pay for importing Typer (55-85 ms here); the usual forms of a few
read-only commands run without Typer too (cli/light_commands.py); any other invocation
goes straight to the Typer app.

The cache file's name carries a fingerprint of the command modules (their sizes and
modification times), so any change to a command regenerates it.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable

from wyckoff.cli import blas_threads

HELP_FLAGS = (["--help"], ["-h"])


def _fingerprint() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    parts = []
    for folder in (here, os.path.join(here, "commands")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return _stable_hash("|".join(parts))


def _stable_hash(text: str) -> str:
    value = 2166136261  # FNV-1a: no hashlib import, stable across processes
    for byte in text.encode():
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return format(value, "08x")


def _cache_path() -> str:
    home = os.environ.get("WYCKOFF_HOME") or os.path.join(os.path.expanduser("~"), ".wyckoff")
    return os.path.join(home, "cache", f"help-{_fingerprint()}.txt")


def main() -> None:
    os.umask(0o077)  # what Wyckoff writes (even the help cache) is the user's only
    blas_threads.use_one_thread()
    if sys.argv[1:] in HELP_FLAGS:
        path = _cache_path()
        try:
            with open(path, encoding="utf-8") as handle:
                sys.stdout.write(handle.read())
            return
        except OSError:
            _write_help_cache(path)
    from wyckoff.cli.light_commands import light_call

    call = light_call(sys.argv[1:])
    if call is not None:
        _run_light(call)
        return
    from wyckoff.cli.app import main as app_main

    app_main()


def _run_light(call: Callable[[], object]) -> None:
    """A light command is a short read-only listing: the cyclic collector's passes over what
    its imports create (pydantic's models, Rich) cost ~10 ms and free nothing."""
    from wyckoff.cli.run_command import run_command

    collecting = gc.isenabled()
    gc.disable()
    try:
        run_command(call)
    finally:
        if collecting:
            gc.enable()


def _write_help_cache(path: str) -> None:
    """Render the help once through Typer (as the user would see it) and keep it."""
    import contextlib
    import io

    from wyckoff.cli.app import app

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        app(["--help"], prog_name="wyckoff")
    text = buffer.getvalue()
    if "用法：" not in text:  # the usage line click_compat.py writes: a help page, not an error
        return
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        temporary = f"{path}.{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
