"""`wyckoff schedule ...`: routine runs on the trading calendar (cron or systemd calls run-due)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wyckoff.cli.output import local_time, print_json, print_notice, print_table
from wyckoff.errors import UsageError
from wyckoff.store import Store

app = typer.Typer(
    help="定时任务 / schedules: add, list, pause, resume, rm, runs, run-due, install, daemon.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
STATUS_LABELS = {"ok": "成功", "failed": "失败", "skipped": "跳过", "running": "运行中"}


def _home_and_store():
    from wyckoff.config import wyckoff_home

    home = wyckoff_home()
    return home, Store.in_home(home)


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="任务名；预设：after-close、tail、pre-open")],
    at: Annotated[str | None, typer.Option("--at", help="北京时间，如 9:25、15:40")] = None,
    days: Annotated[
        str, typer.Option("--days", help="trading | weekdays | daily | mon,tue,…")
    ] = "trading",
    run: Annotated[
        list[str] | None, typer.Option("--run", help="要运行的 wyckoff 子命令，可重复，按顺序执行")
    ] = None,
    ask: Annotated[str | None, typer.Option("--ask", help="无界面向智能体提问")] = None,
) -> None:
    """添加（或替换）定时任务 / add or replace a schedule."""
    from wyckoff.routine.schedule import add_schedule

    schedule = add_schedule(_home_and_store()[1], name, at, days, run, ask, step_problem)
    print_notice(f"已添加定时任务 {schedule['name']}：{schedule['description']}")
    print_notice("让它按时运行：`wyckoff schedule install --print cron`（或 systemd）。")


def step_problem(args: list[str]) -> str | None:
    """What is wrong with `wyckoff ARGS` as a scheduled step, or None: the same Typer app
    run-due's `python -m wyckoff ARGS` runs parses it here, without running anything."""
    from typer.core import TyperGroup
    from typer.main import get_command

    from wyckoff.cli import click_compat as click_errors
    from wyckoff.cli.app import app as root
    from wyckoff.cli.usage_errors import what_went_wrong

    try:  # without help options: a step that only prints help is a mistake too
        context = get_command(root).make_context("wyckoff", list(args), help_option_names=[])
        while isinstance(context.command, TyperGroup) and context._protected_args:
            rest = [*context._protected_args, *context.args]
            name, command, rest = context.command.resolve_command(context, rest)
            context = command.make_context(name, rest, parent=context)
    except click_errors.NoArgsIsHelpError as exc:
        return f"`{exc.ctx.command_path}` 后面缺少子命令"
    except click_errors.UsageError as exc:
        command_path = exc.ctx.command_path if exc.ctx else "wyckoff"
        return f"{what_went_wrong(exc)}，用 `{command_path} -h` 查看用法"
    group = context.command
    if isinstance(group, TyperGroup) and not group.invoke_without_command:
        return f"`{context.command_path}` 后面缺少子命令"
    if context.parent is None:
        return "要写一个 wyckoff 子命令，如 brief --push all"
    return _channel_problem(context.params.get("push"))


def _channel_problem(target: str | None) -> str | None:
    """A step's `--push NAME` (brief, tail) naming no channel the user has: it would fail on
    every run. `all` is fine with none (the step then does its work and pushes nothing)."""
    from wyckoff.routine.notify import chosen

    if target in (None, "all"):
        return None
    try:
        chosen(_home_and_store()[1], target)
    except UsageError as exc:
        return exc.message.removesuffix("。")
    return None


@app.command("list")
def list_schedules(
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出定时任务 / list schedules."""
    from wyckoff.routine.schedule import list_schedules as schedules_of

    schedules = schedules_of(_home_and_store()[1])
    if json_output:
        print_json({"schedules": schedules})
        return
    if not schedules:
        print_notice("还没有定时任务。用 `wyckoff schedule add after-close` 添加收盘后的例行任务。")
        return
    print_table("定时任务", ["名称", "说明"], [[s["name"], s["description"]] for s in schedules])


@app.command("pause")
def pause(name: Annotated[str, typer.Argument()]) -> None:
    """暂停 / pause a schedule."""
    from wyckoff.routine.schedule import set_paused

    set_paused(_home_and_store()[1], name, True)
    print_notice(f"已暂停 {name}。")


@app.command("resume")
def resume(name: Annotated[str, typer.Argument()]) -> None:
    """恢复 / resume a schedule."""
    from wyckoff.routine.schedule import set_paused

    set_paused(_home_and_store()[1], name, False)
    print_notice(f"已恢复 {name}。")


@app.command("rm")
def remove(name: Annotated[str, typer.Argument()]) -> None:
    """删除 / remove a schedule."""
    from wyckoff.routine.schedule import remove_schedule

    remove_schedule(_home_and_store()[1], name)
    print_notice(f"已删除定时任务 {name}。")


@app.command("runs")
def runs(
    name: Annotated[str | None, typer.Argument(help="只看这个任务")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """运行记录 / past runs."""
    from wyckoff import schedule_store

    found = schedule_store.runs(_home_and_store()[1], name)
    if json_output:
        print_json({"runs": found})
        return
    if not found:
        print_notice("还没有运行记录。")
        return
    print_table(
        "运行记录",
        ["日期", "任务", "结果", "开始", "说明"],
        [
            [
                r["day"],
                r["schedule"],
                STATUS_LABELS.get(r["status"], r["status"]),
                local_time(r["started_at"]),
                r["detail"],
            ]
            for r in found
        ],
    )


@app.command("run-due")
def run_due() -> None:
    """运行到点的任务（由 cron / systemd 每分钟调用）/ run what is due now."""
    acted, deliveries = _run_what_is_due(*_home_and_store())
    for result in deliveries:
        if not result["ok"]:
            print_notice(f"失败通知没有送达：{result['error']}")
    if any(a["status"] == "failed" for a in acted):
        raise typer.Exit(1)


def _run_what_is_due(home: Path, store: Store) -> tuple[list[dict], list[dict]]:
    """Run the schedules due now, one line per run, and push a notice of the failed ones:
    (the runs, the notice's push results)."""
    from wyckoff.routine.schedule import failure_notice, open_days_of, run_due

    acted = run_due(store, home, open_days_of(home))
    for action in acted:
        label = STATUS_LABELS[action["status"]]
        print_notice(f"{action['schedule']}：{label} — {action['detail']}")
    return acted, failure_notice(store, acted)


@app.command("install")
def install(
    show: Annotated[str | None, typer.Option("--print", help="cron | systemd")] = None,
) -> None:
    """打印 cron 行或 systemd 单元（不改动系统）/ print the cron line or systemd units."""
    from wyckoff.routine.schedule import cron_line, systemd_units

    home, _ = _home_and_store()
    (home / "schedule").mkdir(parents=True, exist_ok=True, mode=0o700)  # the cron line's log
    if show == "cron":
        typer.echo(cron_line(home))
        print_notice("把这一行加进 `crontab -e`；run-due 每分钟检查一次，到点的任务只运行一次。")
    elif show == "systemd":
        typer.echo(systemd_units(home), nl=False)
    else:
        raise UsageError(
            "请用 --print cron 或 --print systemd：Wyckoff 只打印配置，不自动改动系统。"
        )


@app.command("daemon")
def daemon(
    interval: Annotated[int, typer.Option("--interval", help="检查间隔（秒）")] = 60,
) -> None:
    """没有 cron/systemd 时：前台循环运行 run-due，Ctrl+C 退出 / loop run-due."""
    import time

    if not 10 <= interval <= 3600:
        raise UsageError(f"--interval 是 10 到 3600 秒，收到 {interval}。")
    home, store = _home_and_store()
    print_notice(f"定时任务守护进程已启动，每 {interval} 秒检查一次；Ctrl+C 退出。")
    while True:
        _run_what_is_due(home, store)
        time.sleep(interval)


@app.command("run-ask", hidden=True)
def run_ask(question: Annotated[str, typer.Argument()]) -> None:
    """A scheduled question, headless: risky calls become pending approvals, never actions."""
    import threading

    from wyckoff.cli.agent import open_agent
    from wyckoff.cli.runtime.approval import Approval
    from wyckoff.routine.approvals import queue

    agent = open_agent(interactive=True)
    _, store = _home_and_store()

    def answer_requests() -> None:
        for update in agent.updates():
            if update["type"] == "approval_request":
                request = update["request"]
                number = queue(
                    store, request["name"], request["args"], request["description"], "定时任务"
                )
                print_notice(f"待批准 #{number}：{request['description']}")
                update["answer"].set_result(Approval("queued"))
            elif update["type"] == "question":
                update["answer"].set_result({"status": "skipped", "answer": ""})

    threading.Thread(target=answer_requests, daemon=True).start()
    agent.conversation.append(agent.skills.user_message(question))
    status = "error"
    for event in agent.run_turn(wait_for_background=True):
        if event["type"] == "done" and "agent" not in event:  # the main agent's end
            status = event["status"]
            typer.echo(event["text"])
    agent.close()
    if status != "completed":
        raise typer.Exit(1)
