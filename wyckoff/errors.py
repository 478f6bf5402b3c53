"""Expected failures: each carries one clear Chinese sentence and the exit code the CLI uses."""

from __future__ import annotations


class WyckoffError(Exception):
    """A failure the user can act on. `str(err)` is what they see; never a traceback."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(WyckoffError):
    """The configuration file or a command's arguments are wrong (exit code 2)."""

    exit_code = 2


class UsageError(WyckoffError):
    """A command was called with arguments that cannot work (exit code 2)."""

    exit_code = 2


class NothingToDo(WyckoffError):
    """There was nothing to act on (no stock to check): not a failure. Its own exit code, so
    a scheduled run records the step as done with this sentence instead of as failed."""

    exit_code = 4  # 3 is `ask` stopping at its round limit
