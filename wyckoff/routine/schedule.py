"""Schedules on the trading calendar. `run_due` is what cron, a systemd timer or
`schedule daemon` calls every minute: each schedule whose time has come today runs once
(a missed run is caught up later the same day), a day it does not run on (a weekend, a
holiday of the stored calendar) is recorded as skipped, and two schedulers racing claim
the day's run through one UNIQUE row, so only one runs it.

A run is a list of `wyckoff` commands, each in its own process (which dies with the
scheduler: routine/tethered.py), stopped at the first that fails: a crash leaves the
earlier steps' files whole (each writes atomically) and the run recorded as failed with
one sentence; a failure notice goes to every push channel. A step
that had nothing to do (exit code 4, NothingToDo) is done, its sentence noted in the run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff import schedule_store
from wyckoff.engine.clock import clock_time, is_trading_day, market_now
from wyckoff.errors import NothingToDo, UsageError
from wyckoff.routine.tethered import die_with_parent

if TYPE_CHECKING:
    from wyckoff.store import Store

PRESETS: dict[str, tuple[str, list[list[str]]]] = {
    # 15:40: sync -> screen (saved to the history) -> the paper account's day -> alerts ->
    # brief -> push
    "after-close": (
        "15:40",
        [
            ["data", "sync"],
            ["screen"],
            ["paper", "run"],
            ["alert", "check"],
            ["brief", "--push", "all"],
        ],
    ),
    "tail": ("14:45", [["tail", "--push", "all"]]),  # the tail-session check (#27)
    "pre-open": ("08:45", [["alert", "history"], ["brief", "--push", "all"]]),
}
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAY_LABELS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
DAY_RULES = ("trading", "weekdays", "daily")
STEP_TIMEOUT_S = 3600
NAME = re.compile(r"^[\w-]{1,32}$")


def add_schedule(
    store: Store,
    name: str,
    at: str | None = None,
    days: str = "trading",
    run: list[str] | None = None,
    ask: str | None = None,
    check_step: Callable[[list[str]], str | None] = lambda args: None,
) -> dict[str, Any]:
    """Add (or replace) a schedule. `check_step(args)` says what is wrong with a `--run` step
    (as `wyckoff ARGS` would parse it), or None: a typo is refused now, not on the next run."""
    if not NAME.match(name):
        raise UsageError(f"任务名 {name} 无效：用 1–32 个字母、数字、下划线或短横线。")
    if run and ask:
        raise UsageError("--run 和 --ask 只能选一个。")
    if run:
        kind, command = "run", [_step(text, check_step) for text in run]
    elif ask:
        kind, command = "ask", [["schedule", "run-ask", ask]]
    elif name in PRESETS:
        kind, command = "run", PRESETS[name][1]
    else:
        presets = "、".join(PRESETS)
        raise UsageError(f'请用 --run "命令" 或 --ask "问题" 说明要做什么；预设任务名：{presets}。')
    at = at or (PRESETS[name][0] if name in PRESETS else None)
    if at is None:
        raise UsageError("请用 --at 给出时刻（北京时间），例如 9:25 或 15:40。")
    try:
        at = f"{clock_time(at):%H:%M}"
    except ValueError as problem:
        raise UsageError(f"--at {at} 不是时刻：{problem}（北京时间）。") from None
    _check_days(days)
    with store.transaction():
        schedule_store.write(store, name, at, days, kind, command)
    return next(s for s in list_schedules(store) if s["name"] == name)


def _step(text: str, check_step: Callable[[list[str]], str | None]) -> list[str]:
    try:
        args = shlex.split(text.removeprefix("wyckoff "))
    except ValueError as exc:
        raise UsageError(f"--run {text!r} 无法解析（{exc}）：请检查引号。") from None
    if not args:
        raise UsageError('--run 是空的：写要运行的 wyckoff 子命令，如 "brief --push all"。')
    if args[0] == "schedule" and args[1:2] != ["run-ask"]:
        raise UsageError("定时任务里不能再调用 `wyckoff schedule`。")
    problem = check_step(args)
    if problem is not None:
        raise UsageError(f"--run {text!r} 无法运行：{problem}。")
    return args


def _check_days(days: str) -> None:
    if days in DAY_RULES:
        return
    listed = [d.strip() for d in days.split(",")]
    if not listed or any(d not in WEEKDAYS for d in listed):
        raise UsageError(
            f"--days 可以是 trading（交易日）、weekdays、daily 或 mon,tue,… 的组合，收到 {days}。"
        )


def list_schedules(store: Store) -> list[dict[str, Any]]:
    return [{**s, "description": describe(s)} for s in schedule_store.schedules(store)]


def describe(schedule: dict[str, Any]) -> str:
    days = {"trading": "交易日", "weekdays": "工作日", "daily": "每天"}.get(schedule["days"])
    days = days or "、".join(WEEKDAY_LABELS[WEEKDAYS.index(d)] for d in schedule["days"].split(","))
    if schedule["kind"] == "ask":
        what = f"提问：{schedule['command'][0][2]}"
    else:
        what = " → ".join("wyckoff " + shlex.join(step) for step in schedule["command"])
    paused = "（已暂停）" if schedule["paused"] else ""
    return f"{days} {schedule['at']} {what}{paused}"


def set_paused(store: Store, name: str, paused: bool) -> None:
    with store.transaction():
        if not schedule_store.set_paused(store, name, paused):
            raise UsageError(f"没有名为 {name} 的定时任务。用 `wyckoff schedule list` 查看。")


def remove_schedule(store: Store, name: str) -> None:
    with store.transaction():
        if not schedule_store.delete(store, name):
            raise UsageError(f"没有名为 {name} 的定时任务。用 `wyckoff schedule list` 查看。")


# --- running ------------------------------------------------------------------------------------


def skip_reason(days: str, day: date, open_days: set[date]) -> str | None:
    """Why the schedule does not run on `day`, or None when it does."""
    weekday = day.weekday()
    if days == "daily":
        return None
    if days in ("trading", "weekdays") and weekday >= 5:
        return f"{WEEKDAY_LABELS[weekday]}，不是交易日"
    if days == "trading" and not is_trading_day(day, open_days):
        return "交易日历上这天休市（节假日）"
    if days not in DAY_RULES and WEEKDAYS[weekday] not in days.split(","):
        return f"{WEEKDAY_LABELS[weekday]}不在这个任务的运行日里"
    return None


def run_due(store: Store, home: Path, open_days: set[date]) -> list[dict[str, Any]]:
    """Run what is due now; one entry per schedule acted on (ran, failed or skipped)."""
    now = market_now()
    day = now.date().isoformat()
    _fail_abandoned(store)
    acted = []
    for schedule in schedule_store.schedules(store):
        if schedule["paused"] or now.strftime("%H:%M") < schedule["at"]:
            continue
        reason = skip_reason(schedule["days"], now.date(), open_days)
        if reason is not None:
            if schedule_store.claim(store, schedule["name"], day, "skipped", reason, None):
                acted.append({"schedule": schedule["name"], "status": "skipped", "detail": reason})
            continue
        if not schedule_store.claim(store, schedule["name"], day, "running", "", os.getpid()):
            continue  # run already (or being run by another scheduler)
        status, detail = run_steps(home, schedule, day)
        with store.transaction():
            schedule_store.finish(store, schedule["name"], day, status, detail)
        acted.append({"schedule": schedule["name"], "status": status, "detail": detail})
    return acted


def run_steps(home: Path, schedule: dict[str, Any], day: str) -> tuple[str, str]:
    """Run the schedule's commands in order, each in its own process, into one log file."""
    log_dir = home / "schedule" / "logs"
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_path = log_dir / f"{schedule['name']}-{day}.log"
    idle = []  # the steps that had nothing to do (NothingToDo): done, with their sentence
    with open(log_path, "a", encoding="utf-8") as log:
        os.chmod(log_path, 0o600)
        for number, args in enumerate(schedule["command"], 1):
            shown = "wyckoff " + shlex.join(args)
            log.write(f"$ {shown}\n")
            log.flush()
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "wyckoff", *args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.PIPE,
                    text=True,
                    timeout=STEP_TIMEOUT_S,
                    env={**os.environ, "WYCKOFF_HOME": str(home)},
                    preexec_fn=die_with_parent(),
                )
            except subprocess.TimeoutExpired:
                return (
                    "failed",
                    f"第 {number} 步 `{shown}` 超过 {STEP_TIMEOUT_S // 60} 分钟未结束，已停止。",
                )
            log.write(done.stderr)
            if done.returncode == NothingToDo.exit_code:
                idle.append(f"第 {number} 步 `{shown}` 无事可做：{_last_line(done.stderr)}")
            elif done.returncode != 0:
                return (
                    "failed",
                    f"第 {number} 步 `{shown}` 失败（退出码 {done.returncode}）：{_why(args, done.stderr)}",
                )
    steps = len(schedule["command"])
    return "ok", "；".join([f"{steps} 步全部完成，输出见 {log_path}", *idle])


def _why(args: list[str], stderr: str) -> str:
    """The step's own last sentence, or that this wyckoff lacks the command."""
    if f"没有子命令 {args[0]}" in stderr:
        return f"这个版本的 wyckoff 没有 `{args[0]}` 命令。"
    return _last_line(stderr)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "没有输出"


def _fail_abandoned(store: Store) -> None:
    """A run whose scheduler died (kill -9, reboot) is recorded as failed, not running forever."""
    for run in schedule_store.running(store):
        if run["pid"] and not _alive(run["pid"]):
            with store.transaction():
                schedule_store.finish(
                    store, run["schedule"], run["day"], "failed", "运行中断：调度进程意外退出。"
                )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_days_of(home: Path) -> set[date]:
    """The trading days the configured market store knows (empty without data)."""
    from wyckoff.agents.market_data import MarketData
    from wyckoff.config import load_config

    try:
        days = MarketData(home, load_config(home)).open_days()
    except Exception:  # no usable store: weekdays are trading days
        return set()
    return set(days.tolist())


def failure_notice(store: Store, acted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Push one notice per failed run to every channel; the push results."""
    from wyckoff.routine.notify import channels, push

    failed = [a for a in acted if a["status"] == "failed"]
    targets = channels(store)
    if not failed or not targets:
        return []
    text = "\n".join(f"定时任务 {a['schedule']} 运行失败：{a['detail']}" for a in failed)
    return push(targets, "Wyckoff 定时任务失败", text)


# --- installing -------------------------------------------------------------------------------


def cron_line(home: Path) -> str:
    program = shlex.quote(sys.executable)
    log = shlex.quote(str(home / "schedule" / "run-due.log"))
    return f"* * * * * WYCKOFF_HOME={shlex.quote(str(home))} {program} -m wyckoff schedule run-due >> {log} 2>&1"


def systemd_units(home: Path) -> str:
    return f"""# ~/.config/systemd/user/wyckoff-schedule.service
[Unit]
Description=Wyckoff 定时任务（到点的任务各运行一次）

[Service]
Type=oneshot
Environment=WYCKOFF_HOME={home}
ExecStart={sys.executable} -m wyckoff schedule run-due

# ~/.config/systemd/user/wyckoff-schedule.timer
[Unit]
Description=每分钟检查 Wyckoff 定时任务

[Timer]
OnCalendar=*-*-* *:*:00
Persistent=true

[Install]
WantedBy=timers.target

# 启用：systemctl --user daemon-reload && systemctl --user enable --now wyckoff-schedule.timer
"""
