"""The `wyckoff` command: a Typer root with one sub-app per area.

Typer and our own cheap modules are imported at module level; every command imports the
heavy libraries it needs (pandas, DuckDB, the SDKs) when it runs, so `wyckoff --help` stays fast.
"""

from __future__ import annotations

import sys

import typer

from wyckoff.cli import click_compat as click_errors
from wyckoff.cli import interrupt
from wyckoff.cli.commands import alert as alert_commands
from wyckoff.cli.commands import approvals as approvals_commands
from wyckoff.cli.commands import ask as ask_command
from wyckoff.cli.commands import brief as brief_command
from wyckoff.cli.commands import market as market_commands
from wyckoff.cli.commands import mcp as mcp_commands
from wyckoff.cli.commands import memory as memory_commands
from wyckoff.cli.commands import model as model_commands
from wyckoff.cli.commands import notify as notify_commands
from wyckoff.cli.commands import portfolio as portfolio_commands
from wyckoff.cli.commands import schedule as schedule_commands
from wyckoff.cli.commands import session as session_commands
from wyckoff.cli.commands import skills as skills_commands
from wyckoff.cli.commands import sweep as sweep_commands
from wyckoff.cli.commands import trace as trace_commands
from wyckoff.cli.commands import watch as watch_commands
from wyckoff.cli.output import CANCELLED_EXIT, is_interactive, print_error
from wyckoff.errors import UsageError, WyckoffError

app = typer.Typer(
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


app.command("ask")(ask_command.ask)
app.command("screen")(market_commands.screen)
app.command("analyze")(market_commands.analyze)
app.command("market")(market_commands.market)
app.command("brief")(brief_command.brief)
backtest_app = typer.Typer(
    help="漏斗策略回测、参数扫描与滚动检验 / backtest, parameter sweeps, walk-forward.",
    rich_markup_mode=None,
)
backtest_app.callback(invoke_without_command=True)(market_commands.backtest)
backtest_app.command("sweep")(sweep_commands.sweep)
backtest_app.command("sweeps")(sweep_commands.sweeps)
backtest_app.command("cluster")(sweep_commands.cluster)
app.add_typer(backtest_app, name="backtest")
app.add_typer(market_commands.data_app, name="data")
app.add_typer(memory_commands.app, name="memory")
app.add_typer(model_commands.app, name="model")
app.add_typer(mcp_commands.app, name="mcp")
app.add_typer(portfolio_commands.app, name="portfolio")
app.add_typer(session_commands.app, name="session")
app.add_typer(trace_commands.app, name="trace")
app.add_typer(watch_commands.app, name="watch")
app.add_typer(alert_commands.app, name="alert")
app.add_typer(notify_commands.app, name="notify")
app.add_typer(schedule_commands.app, name="schedule")
app.add_typer(approvals_commands.app, name="approvals")
app.add_typer(skills_commands.skills_app, name="skills")
app.add_typer(skills_commands.prompt_app, name="prompt")


def main() -> None:
    """Console entry point: expected failures print one sentence, never a traceback."""
    interrupt.install()
    try:
        # standalone_mode=False: usage errors reach us, to be told in Chinese
        result = app(prog_name="wyckoff", standalone_mode=False)  # same name under python -m
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()
        sys.exit(2)
    except click_errors.UsageError as exc:
        from wyckoff.cli.usage_errors import describe_usage_error

        print_error(describe_usage_error(exc))
        sys.exit(2)
    except WyckoffError as exc:
        print_error(exc.message)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        result = CANCELLED_EXIT
    except Exception:
        if not interrupt.pressed():  # e.g. DuckDB's "Query interrupted" after a Ctrl+C
            raise
        result = CANCELLED_EXIT
    if result == CANCELLED_EXIT:
        interrupt.cancelling()
    if isinstance(result, int):
        sys.exit(result)
