"""Command-line usage errors (unknown option, missing or invalid argument) in Chinese, and
the same for a web form's fields.

Typer parses arguments with its own copy of Click (see click_compat.py) and converts values with
pydantic; both speak English, so the error is rebuilt here from its parts. Every such error names
the option or argument as the user types it or reads it in `-h` (`--input-per-1m`, `ID`), never
the Python parameter or the config field behind it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from wyckoff.cli import click_compat as click_errors
from wyckoff.config import describe_pydantic_error
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from pydantic import ValidationError


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
    if exc.param is None:
        return ""
    if exc.param.param_type_name == "argument":  # as the usage line shows it, not its name
        return exc.param.metavar or exc.param.name or ""
    return " / ".join(exc.param.opts)


def option_name(field: str, arguments: Mapping[str, str] | None = None) -> str:
    """The option (or argument's metavar) the user gave for the value of `field`."""
    return (arguments or {}).get(field) or f"--{field.replace('_', '-')}"


def invalid_value(
    field: str, problem: str, arguments: Mapping[str, str] | None = None
) -> UsageError:
    """The value given for `field` is wrong: one sentence naming its option."""
    return UsageError(f"参数 {option_name(field, arguments)} 的值无效：{problem}。")


def invalid_options(
    exc: ValidationError, given: Mapping[str, object], arguments: Mapping[str, str] | None = None
) -> UsageError:
    """A pydantic error over the fields a command filled from its options (`given`)."""
    field, problem = first_problem(exc)
    if field not in given:
        return UsageError(f"参数有误：{problem}。")
    return invalid_value(field, problem, arguments)


def form_problem(exc: ValidationError, labels: Mapping[str, str]) -> str:
    """A pydantic error over a web form, naming each field as the page labels it:
    "「股数」填得不对：需要一个整数", or "还没填：股数、成交价" when a check of the whole form
    lists the fields it lacks (in its error's ctx `missing`)."""
    missing = (exc.errors()[0].get("ctx") or {}).get("missing")
    if missing:
        return f"还没填：{'、'.join(labels.get(f, f) for f in missing)}"
    field, problem = first_problem(exc)
    return f"「{labels.get(field, field)}」填得不对：{problem}" if field else problem


def first_problem(exc: ValidationError) -> tuple[str, str]:
    """The field (top level, "" for the whole model) of a pydantic error's first problem, and
    the problem in Chinese."""
    first = exc.errors()[0]
    return (str(first["loc"][0]) if first["loc"] else "", describe_pydantic_error(first))


def _no_such_command(message: str) -> str:
    """ "No such command 'scren'. Did you mean 'screen'?" (Typer's words) in Chinese."""
    typed, _, guesses = message.partition(". Did you mean ")
    name = typed.partition(" command ")[2].rstrip(".").strip("'")
    suggested = "、".join(g.strip("'") for g in guesses.rstrip("?").split(", ") if g)
    return f"没有子命令 {name}" + (f"（是不是 {suggested}？）" if suggested else "")
