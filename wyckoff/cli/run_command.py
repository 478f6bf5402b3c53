"""How every command ends, whichever way it was dispatched (Typer or the light path): an
expected failure is one Chinese sentence and its exit code, a Ctrl+C is 已取消 and 130, and
an int the command returns is the exit code. Imports no Typer."""

from __future__ import annotations

import sys
from collections.abc import Callable

from wyckoff.cli import interrupt
from wyckoff.cli.output import CANCELLED_EXIT, print_error, print_notice
from wyckoff.errors import NothingToDo, WyckoffError, describe_os_error


def run_command(command: Callable[[], object]) -> None:
    """Run `command` as the whole process: it exits with the command's outcome."""
    interrupt.install()
    try:
        result = command()
    except NothingToDo as exc:
        print_notice(exc.message)
        sys.exit(exc.exit_code)
    except WyckoffError as exc:
        print_error(exc.message)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        result = CANCELLED_EXIT
    except BrokenPipeError:
        raise
    except OSError as exc:  # a file the command could not read or write: disk full, no access
        print_error(describe_os_error(exc))
        sys.exit(1)
    except Exception:
        if not interrupt.pressed():  # e.g. DuckDB's "Query interrupted" after a Ctrl+C
            raise
        result = CANCELLED_EXIT
    if result == CANCELLED_EXIT:
        interrupt.cancelling()
    if isinstance(result, int):
        sys.exit(result)
