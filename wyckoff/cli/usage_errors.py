"""Command-line usage errors (unknown option, missing or invalid argument) in Chinese.

Typer parses arguments with its own copy of Click (see click_compat.py) and converts values with
pydantic; both speak English, so the error is rebuilt here from its parts.
"""

from __future__ import annotations

import re

from wyckoff.cli import click_compat as click_errors
from wyckoff.config import describe_pydantic_error


def describe_usage_error(exc: click_errors.UsageError) -> str:
    """What was wrong with the command line and how to see the right usage."""
    command = exc.ctx.command_path if exc.ctx else "wyckoff"
    return f"{what_went_wrong(exc)}。用 `{command} -h` 查看用法。"


def what_went_wrong(exc: click_errors.UsageError) -> str:
    if isinstance(exc, click_errors.NoSuchOption):
        guess = f"（是不是 {'、'.join(sorted(exc.possibilities))}？）" if exc.possibilities else ""
        return f"没有选项 {exc.option_name}{guess}"
    if isinstance(exc, click_errors.MissingParameter):
        return f"缺少参数 {_hint(exc)}"
    if isinstance(exc, click_errors.BadParameter):
        cause = exc.__cause__
        errors = cause.errors() if hasattr(cause, "errors") else []
        problem = describe_pydantic_error(errors[0]) if errors else exc.message
        choices = re.search(r"is not one of (.*?)\.?$", problem)
        problem = f"可选 {choices.group(1)}" if choices else problem
        return f"参数 {_hint(exc)} 的值无效：{problem}"
    if exc.message.startswith("Got unexpected extra argument"):
        return f"多余的参数 {exc.message.rpartition('(')[2].rstrip(')')}"
    if exc.message.startswith("No such command"):
        return _no_such_command(exc.message)
    return f"命令行有误：{exc.message}"


def _hint(exc: click_errors.BadParameter) -> str:
    if exc.param_hint:
        return exc.param_hint if isinstance(exc.param_hint, str) else " / ".join(exc.param_hint)
    if exc.param is not None:
        return " / ".join(exc.param.opts) or (exc.param.name or "").upper()
    return ""


def _no_such_command(message: str) -> str:
    """ "No such command 'scren'. Did you mean 'screen'?" (Typer's words) in Chinese."""
    typed, _, guesses = message.partition(". Did you mean ")
    name = typed.partition(" command ")[2].rstrip(".").strip("'")
    suggested = "、".join(g.strip("'") for g in guesses.rstrip("?").split(", ") if g)
    return f"没有子命令 {name}" + (f"（是不是 {suggested}？）" if suggested else "")
