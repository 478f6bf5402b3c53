"""Read-only commands run without Typer. Typer 0.29 gives each parameter a pydantic-backed
converter, so any command dispatched through it pays for importing Typer and building its
command (~45 ms) before any work; `model list`'s work is less than that.

A light command's usual forms (its flags, and options given as `--name value`) are recognised
exactly and its function is called directly: the same function its Typer command calls. Any
other form (help, a typo, an option given twice, `--name=value`, a value that is not plainly
valid, root options) goes to Typer, so help and errors stay Typer's own."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from importlib import import_module


def whole_number(text: str) -> int:
    """A count as a user types it (`--days 7`); any other spelling is left to Typer."""
    if not (text.isascii() and text.isdigit() and text[0] != "0" and len(text) <= 9):
        raise ValueError(text)
    return int(text)


class Light:
    """How to run one command without Typer (a plain class: a NamedTuple costs every command
    a millisecond to define)."""

    def __init__(
        self,
        function: str,
        flags: dict[str, str],
        values: dict[str, tuple[str, Callable[[str], object]]],
    ) -> None:
        self.function = function  # "module:function", the one the Typer command calls
        self.flags = flags  # flag -> keyword argument set to True
        self.values = values  # option taking a value -> (keyword, converter)


# (group, command) -> how to run it without Typer. Each entry's options are checked against
# its Typer command, and its output against Typer's, in tests/integration/test_light_commands.py.
LIGHT_COMMANDS = {
    ("model", "list"): Light(
        "wyckoff.cli.commands.model_views:list_models", {"--json": "json_output"}, {}
    ),
    ("model", "usage"): Light(
        "wyckoff.cli.commands.model_views:usage",
        {"--json": "json_output"},
        {"--days": ("days", whole_number)},
    ),
    ("watch", "list"): Light(
        "wyckoff.cli.commands.watch_views:list_watched",
        {"--json": "json_output"},
        {"--tag": ("tag", str)},
    ),
    ("memory", "list"): Light(
        "wyckoff.cli.commands.memory_views:list_memories",
        {"--json": "json_output"},
        {"--type": ("memory_type", str)},
    ),
}


def light_call(argv: list[str]) -> Callable[[], object] | None:
    """The call that runs `wyckoff ARGV` without Typer, or None when Typer must run it."""
    light = LIGHT_COMMANDS.get((argv[0], argv[1])) if len(argv) >= 2 else None
    if light is None:
        return None
    keywords = _keywords(light, argv[2:])
    if keywords is None:
        return None
    module, _, name = light.function.partition(":")
    return partial(getattr(import_module(module), name), **keywords)


def _keywords(light: Light, args: list[str]) -> dict[str, object] | None:
    keywords: dict[str, object] = {}
    rest = list(args)
    while rest:
        option = rest.pop(0)
        if option in light.flags and light.flags[option] not in keywords:
            keywords[light.flags[option]] = True
            continue
        if option not in light.values or not rest or rest[0].startswith("-"):
            return None
        keyword, convert = light.values[option]
        if keyword in keywords:
            return None
        try:
            keywords[keyword] = convert(rest.pop(0))
        except ValueError:
            return None
    return keywords
