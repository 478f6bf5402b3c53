"""The one import of typer's private copy of Click (`typer._click`, from typer 0.26): the
exceptions its parser raises, which the entry point catches to answer in Chinese. Typer is
bounded below 0.30 in pyproject.toml, so a release that moves them fails here, at install."""

from typer._click.exceptions import (
    BadParameter,
    MissingParameter,
    NoArgsIsHelpError,
    NoSuchOption,
    UsageError,
)

__all__ = ["BadParameter", "MissingParameter", "NoArgsIsHelpError", "NoSuchOption", "UsageError"]
