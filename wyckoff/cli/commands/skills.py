"""`wyckoff skills ...` and `wyckoff prompt ...`: what the agent can be asked to do."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import print_notice, print_table
from wyckoff.cli.prompt_templates import TEMPLATES
from wyckoff.errors import UsageError

skills_app = typer.Typer(
    help="技能 / skills: list, show.", no_args_is_help=True, rich_markup_mode=None
)
prompt_app = typer.Typer(
    help="提示模板 / prompt templates: list, show.", no_args_is_help=True, rich_markup_mode=None
)


def _library():
    from wyckoff.cli.skills import SkillLibrary
    from wyckoff.config import wyckoff_home

    library = SkillLibrary(wyckoff_home())
    for line in library.warnings + library.notices:
        print_notice(line)
    return library


@skills_app.command("list")
def list_skills() -> None:
    """列出内置与用户技能 / built-in and user skills."""
    library = _library()
    print_table(
        "技能",
        ["命令", "说明", "来源"],
        [[f"/{s.name}", s.description, _origin(s)] for s in library.skills.values()],
    )


@skills_app.command("show")
def show_skill(name: Annotated[str, typer.Argument(help="技能名称")]) -> None:
    """显示技能的完整指令 / print a skill."""
    skill = _library().get(name)
    typer.echo(f"/{skill.name} — {skill.description}（{_origin(skill)}）\n\n{skill.body}")


def _origin(skill) -> str:
    return "内置" if skill.origin == "built-in" else skill.origin


@prompt_app.command("list")
def list_prompts() -> None:
    """列出提示模板 / prompt templates."""
    print_table(
        "提示模板",
        ["名称", "说明"],
        [[name, description] for name, (description, _) in TEMPLATES.items()],
    )


@prompt_app.command("show")
def show_prompt(name: Annotated[str, typer.Argument(help="模板名称")]) -> None:
    """显示模板全文（把｛｝中的内容换成你的，再用 wyckoff ask 发送）/ print a template."""
    if name not in TEMPLATES:
        raise UsageError(f"没有名为 {name} 的模板：可选 {', '.join(TEMPLATES)}。")
    typer.echo(TEMPLATES[name][1])
