"""A Typer root group whose commands are imported when used: the table says where each one
lives ("module:attribute", a Typer sub-app or a command function), and only the command
being run is imported and built. Help, typo suggestions and completion still see every
name (listing them imports them all, which only `--help` does, and that is cached)."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo


class LazyCommands(MutableMapping):
    """name -> click command, built from the table on first use (then kept)."""

    def __init__(self, built: dict[str, Any], table: dict[str, str], group: TyperGroup) -> None:
        self.built, self.table, self.group = dict(built), table, group

    def __getitem__(self, name: str) -> Any:
        if name not in self.built:
            if name not in self.table:
                raise KeyError(name)
            self.built[name] = self.group.build(name, self.table[name])
        return self.built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        self.built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.built, *self.table]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self.built, *self.table]))


class LazyGroup(TyperGroup):
    """Set `table` on a subclass; pass that subclass as `typer.Typer(cls=...)`."""

    table: dict[str, str] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(dict(self.commands), self.table, self)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: nothing is imported to list them

    def build(self, name: str, where: str) -> Any:
        """The click command for `name`, made the way Typer makes registered ones."""
        module, _, attribute = where.partition(":")
        target = getattr(import_module(module), attribute)
        options = {"pretty_exceptions_short": True, "rich_markup_mode": self.rich_markup_mode}
        if isinstance(target, typer.Typer):
            return get_group_from_info(
                TyperInfo(target, name=name), suggest_commands=self.suggest_commands, **options
            )
        return get_command_from_info(CommandInfo(name=name, callback=target), **options)
