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


class InvalidField(ConfigError):
    """A value given for a config field is wrong: the CLI names the option it came from."""

    def __init__(self, message: str, field: str, problem: str) -> None:
        super().__init__(message)
        self.field = field
        self.problem = problem


class UsageError(WyckoffError):
    """A command was called with arguments that cannot work (exit code 2)."""

    exit_code = 2
