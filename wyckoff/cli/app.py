"""The `wyckoff` command: a Typer root with one sub-app per area.

The root imports no command module: COMMANDS says where each lives, and only the one being
run is imported and built (cli/lazy_commands.py). Every command imports the heavy libraries
it needs (pandas, DuckDB, the SDKs) when it runs.
"""

from __future__ import annotations

import sys

import typer

from wyckoff.cli import click_compat as click_errors
from wyckoff.cli.lazy_commands import LazyGroup
from wyckoff.cli.output import CANCELLED_EXIT, is_interactive, print_error
from wyckoff.cli.run_command import run_command
from wyckoff.errors import UsageError

# name -> "module:attribute" (a Typer sub-app or a command function), in `--help` order.
# A new command or command group is one line here.
COMMANDS = {
    "ask": "wyckoff.cli.commands.ask:ask",
    "screen": "wyckoff.cli.commands.market:screen",
    "analyze": "wyckoff.cli.commands.market:analyze",
    "market": "wyckoff.cli.commands.market:market",
    "brief": "wyckoff.cli.commands.brief:brief",
    "web": "wyckoff.cli.commands.web:web",
    "backtest": "wyckoff.cli.commands.sweep:backtest_app",
    "research": "wyckoff.cli.commands.research:app",
    "data": "wyckoff.cli.commands.market:data_app",
    "memory": "wyckoff.cli.commands.memory:app",
    "model": "wyckoff.cli.commands.model:app",
    "mcp": "wyckoff.cli.commands.mcp:app",
    "portfolio": "wyckoff.cli.commands.portfolio:app",
    "paper": "wyckoff.cli.commands.paper:app",
    "session": "wyckoff.cli.commands.session:app",
    "trace": "wyckoff.cli.commands.trace:app",
    "tail": "wyckoff.cli.commands.tail:app",
    "watch": "wyckoff.cli.commands.watch:app",
    "alert": "wyckoff.cli.commands.alert:app",
    "scorecard": "wyckoff.cli.commands.scorecard:app",
    "notify": "wyckoff.cli.commands.notify:app",
    "schedule": "wyckoff.cli.commands.schedule:app",
    "approvals": "wyckoff.cli.commands.approvals:app",
    "skills": "wyckoff.cli.commands.skills:skills_app",
    "prompt": "wyckoff.cli.commands.skills:prompt_app",
}


class RootGroup(LazyGroup):
    table = COMMANDS


app = typer.Typer(
    cls=RootGroup,
    name="wyckoff",
    help="Wyckoff — A 股威科夫投研智能体 / terminal research agent for China A-shares.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def root(
    ctx: typer.Context,
    continue_latest: bool = typer.Option(
        False, "--continue", "-c", help="继续最近的会话 / reopen the latest session"
    ),
    session: str | None = typer.Option(None, "--session", help="打开指定会话 / open a session"),
    model: str | None = typer.Option(None, "--model", "-m", help="模型 id / model id"),
    workspace: str | None = typer.Option(
        None, "--workspace", help="本地工具可访问的文件夹（默认当前目录）/ local tools' root"
    ),
) -> None:
    """不带子命令时打开终端界面 / with no command, open the TUI."""
    if workspace is not None:
        use_workspace(workspace)
    if ctx.invoked_subcommand is not None:
        return

    if not is_interactive():
        raise UsageError(
            "终端界面需要在终端里运行（输入或输出被管道/重定向了）。"
            '脚本里请用 `wyckoff ask "问题"`，或 `wyckoff --help` 查看命令。'
        )
    from wyckoff.cli.tui.app import create_app

    create_app(model_id=model, session_id=session, continue_latest=continue_latest).run()


def use_workspace(folder: str) -> None:
    """Local tools work in `folder` (passed on to them through WYCKOFF_WORKSPACE)."""
    import os

    path = os.path.realpath(os.path.expanduser(folder))
    if not os.path.isdir(path):
        raise UsageError(
            f"--workspace {folder} 不是一个存在的文件夹：请给出要让本地工具使用的文件夹。"
        )
    os.environ["WYCKOFF_WORKSPACE"] = path


def main() -> None:
    """Console entry point: expected failures print one sentence, never a traceback."""
    run_command(_run_app)


def _run_app() -> object:
    """The Typer app; its usage errors are told in Chinese with exit code 2."""
    try:
        # standalone_mode=False: usage errors reach us, to be told in Chinese
        return app(prog_name="wyckoff", standalone_mode=False)  # same name under python -m
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()
        sys.exit(2)
    except click_errors.UsageError as exc:
        from wyckoff.cli.usage_errors import describe_usage_error

        print_error(describe_usage_error(exc))
        sys.exit(2)
    except typer.Abort:
        return CANCELLED_EXIT
