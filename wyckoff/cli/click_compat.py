"""The one import of typer's private copy of Click (`typer._click`, from typer 0.26): the
exceptions its parser raises, which the entry point catches to answer in Chinese, and the
help pages' own words in Chinese (`用法：`, `选项：`, `命令：`, `[默认：…]`, the help option's
line), with a value's type shown as `<int>` or `<str>`, not as Python writes it. Typer is
bounded below 0.30 in pyproject.toml, so a release that moves them fails here, at install."""

from __future__ import annotations

import re
from typing import Any

import typer.core
from typer._click import core as click_core
from typer._click import formatting
from typer._click.exceptions import (
    BadParameter,
    MissingParameter,
    NoArgsIsHelpError,
    NoSuchOption,
    UsageError,
)

__all__ = ["BadParameter", "MissingParameter", "NoArgsIsHelpError", "NoSuchOption", "UsageError"]

USAGE_PREFIX = "用法："  # the launcher caches a help page only when it holds this
HELP_OPTION_TEXT = "显示本帮助并退出 / show this help"
USAGE_WORDS = {"[OPTIONS]": "[选项]", "COMMAND [ARGS]...": "子命令 [参数]..."}
# What the help pages say through gettext (typer.core's `_`); error messages stay English
# here because usage_errors.py rebuilds them from their parts.
HELP_WORDS = {
    "Arguments": "参数",
    "Options": "选项",
    "Commands": "命令",
    "default: {default}": "默认：{default}",
    "required": "必填",
    "env var: {var}": "环境变量：{var}",
    "(dynamic)": "（动态）",
}


def chinese_help_word(message: str) -> str:
    return HELP_WORDS.get(message, message)


def plain_value_type(shown: str) -> str:
    """`<list[str]>` -> `<str>` (the help says it repeats), `<int range>` -> `<int>`."""
    return re.sub(r"<list\[(.+)\]>", r"<\1>", shown).replace(" range>", ">")


def install_chinese_help() -> None:
    typer.core._ = chinese_help_word  # type: ignore[attr-defined]
    english_usage = formatting.HelpFormatter.write_usage
    english_help_option = click_core.Command.get_help_option
    python_value_type = typer.core._TyperParameter.display_type

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        for english, chinese in USAGE_WORDS.items():
            args = args.replace(english, chinese)
        english_usage(self, prog, args, USAGE_PREFIX if prefix is None else prefix)

    def write_heading(self, heading: str) -> None:
        self.write(f"{'':>{self.current_indent}}{heading}：\n")

    def get_help_option(self, ctx: Any) -> Any:
        option = english_help_option(self, ctx)
        if option is not None:
            option.help = HELP_OPTION_TEXT
        return option

    def display_type(self, ctx: Any) -> str:
        return plain_value_type(python_value_type(self, ctx))

    formatting.HelpFormatter.write_usage = write_usage  # type: ignore[method-assign]
    formatting.HelpFormatter.write_heading = write_heading  # type: ignore[method-assign]
    click_core.Command.get_help_option = get_help_option  # type: ignore[method-assign]
    typer.core._TyperParameter.display_type = display_type  # type: ignore[method-assign]


install_chinese_help()
