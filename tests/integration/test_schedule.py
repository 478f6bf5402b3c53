"""Schedules on the trading calendar at an injected time (WYCKOFF_NOW): once per day, caught
up the same day, skipped with a record on weekends and holidays, one run when two
schedulers race, and a failed run recorded, announced and not stopping the others."""

from __future__ import annotations

import json
import socket
import sys
from datetime import date, timedelta

import duckdb
import pytest

from tests.cli_runner import cli
from tests.conftest import cli_env, spawn_cli
from tests.processes import eventually, killed_afterwards, running
from tests.push_servers import PushServer
from wyckoff.engine.market_store import MarketStore


def last_market_day(home) -> date:
    return MarketStore.for_source(home, "demo").bar_dates()["date"].iloc[-1].date()


def at(day: date, minute: str) -> dict[str, str]:
    """The environment of a run at `minute` (Beijing time) on `day`, behind the network guard."""
    return {
        "WYCKOFF_NOW": f"{day.isoformat()}T{minute}:00+08:00",
        "PYTHONPATH": cli_env()["PYTHONPATH"],
    }


def runs() -> list[dict]:
    return json.loads(cli("schedule", "runs", "--json").stdout)["runs"]


def run_due(day: date, minute: str):
    return cli("schedule", "run-due", env=at(day, minute))


def test_run_due_runs_a_due_schedule_once_and_skips_weekends(demo_home):
    day = last_market_day(demo_home)
    assert (
        cli("schedule", "add", "evening", "--at", "15:40", "--run", "alert check").returncode == 0
    )
    assert run_due(day, "15:39").stderr == "" and runs() == []  # not yet
    first = run_due(day, "15:41")
    assert first.returncode == 0, first.stderr
    (run,) = runs()
    assert (run["schedule"], run["day"], run["status"]) == ("evening", day.isoformat(), "ok")
    assert run_due(day, "15:41").stderr == "" and len(runs()) == 1  # the same minute again
    saturday = day + timedelta(days=(5 - day.weekday()) % 7 or 7)
    skipped = run_due(saturday, "16:00")
    assert "周六，不是交易日" in skipped.stderr
    assert [(r["day"], r["status"]) for r in runs()][0] == (saturday.isoformat(), "skipped")
    run_due(saturday, "16:01")
    assert len(runs()) == 2  # the skip is recorded once
    log = (demo_home / "schedule" / "logs" / f"evening-{day.isoformat()}.log").read_text()
    assert log.count("$ wyckoff alert check") == 1


def test_a_holiday_on_the_stored_calendar_is_skipped_and_a_missed_run_caught_up(demo_home):
    day = last_market_day(demo_home)
    weekdays = [
        day + timedelta(days=n) for n in range(1, 10) if (day + timedelta(days=n)).weekday() < 5
    ]
    holiday, reopening = weekdays[0], weekdays[1]
    conn = duckdb.connect(str(MarketStore.for_source(demo_home, "demo").path))
    conn.execute("INSERT INTO trade_calendar VALUES (?, true, 'test')", [reopening])
    conn.close()
    cli("schedule", "add", "evening", "--at", "15:40", "--run", "alert check")
    assert "节假日" in run_due(holiday, "15:45").stderr
    caught_up = run_due(reopening, "21:30")  # the scheduler was off at 15:40
    assert caught_up.returncode == 0, caught_up.stderr
    assert [(r["day"], r["status"]) for r in runs()] == [
        (reopening.isoformat(), "ok"),
        (holiday.isoformat(), "skipped"),
    ]


def test_two_schedulers_racing_run_the_schedule_once(demo_home):
    day = last_market_day(demo_home)
    cli("schedule", "add", "evening", "--at", "15:40", "--run", "alert check")
    racers = [spawn_cli("schedule", "run-due", env=at(day, "15:41")) for _ in range(2)]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), outputs
    assert sum("evening：成功" in err for _, err in outputs) == 1
    (run,) = runs()
    assert run["status"] == "ok"
    log = (demo_home / "schedule" / "logs" / f"evening-{day.isoformat()}.log").read_text()
    assert log.count("$ wyckoff alert check") == 1


def saved_by_another_version(home, name: str, at: str, step: list[str]) -> None:
    """A schedule whose step this wyckoff lacks (written by a version that had it)."""
    import sqlite3

    with sqlite3.connect(home / "wyckoff.db") as conn:
        conn.execute(
            "INSERT INTO schedules (name, at, days, kind, command) VALUES (?, ?, 'trading', 'run', ?)",
            (name, at, json.dumps([step])),
        )


def test_a_failing_run_is_recorded_announced_and_does_not_stop_the_others(demo_home):
    day = last_market_day(demo_home)
    cli("schedule", "add", "later", "--at", "14:50", "--run", "alert check")
    saved_by_another_version(demo_home, "early", "14:45", ["nosuch", "--flag"])
    with PushServer(reply={"errcode": 0}) as phone:
        cli("notify", "add", "phone", "--kind", "wecom", "--url-env", "PHONE_URL")
        result = cli("schedule", "run-due", env={**at(day, "15:00"), "PHONE_URL": phone.url()})
    assert result.returncode == 1
    by_name = {r["schedule"]: r for r in runs()}
    assert by_name["later"]["status"] == "ok"
    assert by_name["early"]["status"] == "failed"
    assert by_name["early"]["detail"] == (
        "第 1 步 `wyckoff nosuch --flag` 失败（退出码 2）：这个版本的 wyckoff 没有 `nosuch` 命令。"
    )
    (notice,) = phone.received
    assert "定时任务 early 运行失败" in notice.json["markdown"]["content"]


def test_the_tail_preset_pushes_its_verdicts_and_the_after_close_brief_lists_them(demo_home):
    day = last_market_day(demo_home)
    assert cli("portfolio", "add", "000001", "--shares", "100", "--cost", "5").returncode == 0
    assert cli("watch", "add", "000002").returncode == 0
    cli("schedule", "add", "tail")
    cli("schedule", "add", "after-close")
    with PushServer(reply={"errcode": 0}) as phone:
        cli("notify", "add", "phone", "--kind", "wecom", "--url-env", "PHONE_URL")
        tail_run = cli("schedule", "run-due", env={**at(day, "14:46"), "PHONE_URL": phone.url()})
        assert tail_run.returncode == 0, tail_run.stderr
        (pushed,) = [r.json["markdown"]["content"] for r in phone.received]
        close_run = cli("schedule", "run-due", env={**at(day, "15:41"), "PHONE_URL": phone.url()})
        assert close_run.returncode == 0, close_run.stderr
        brief_text = "".join(r.json["markdown"]["content"] for r in phone.received[1:])
    assert f"尾盘检查 {day.isoformat()} 14:46" in pushed and len(pushed.encode()) < 1000
    verdict_lines = [line for line in pushed.splitlines() if line.startswith("- ")]
    assert [line.split()[3:5] for line in verdict_lines] == [
        ["000001", "平安银行（持仓）"],
        ["000002", "万科A（自选）"],
    ]
    assert "## 尾盘检查" in brief_text
    for line in verdict_lines:
        assert line in brief_text  # the same verdicts, as recorded at 14:46
    assert [r["status"] for r in runs()] == ["ok", "ok"]


def test_a_scheduled_tail_with_nothing_to_check_is_done_with_a_note_not_a_failure(demo_home):
    day = last_market_day(demo_home)
    cli("schedule", "add", "tail")  # no holdings, an empty watchlist
    with PushServer(reply={"errcode": 0}) as phone:
        cli("notify", "add", "phone", "--kind", "wecom", "--url-env", "PHONE_URL")
        ran = cli("schedule", "run-due", env={**at(day, "14:46"), "PHONE_URL": phone.url()})
    assert ran.returncode == 0, ran.stderr
    (run,) = runs()
    assert run["status"] == "ok" and "无可检查的股票" in run["detail"]
    assert "tail：成功" in ran.stderr and "失败" not in ran.stderr
    assert phone.received == []  # no failure notice, and no empty verdict message


def test_paused_schedules_do_not_run_and_install_prints_without_touching_the_system(demo_home):
    day = last_market_day(demo_home)
    cli("schedule", "add", "after-close")
    assert cli("schedule", "pause", "after-close").returncode == 0
    run_due(day, "15:50")
    assert runs() == []
    listed = json.loads(cli("schedule", "list", "--json").stdout)["schedules"]
    assert listed[0]["paused"] == 1 and listed[0]["at"] == "15:40"
    cron = cli("schedule", "install", "--print", "cron")
    assert cron.stdout.startswith("* * * * * WYCKOFF_HOME=") and "schedule run-due" in cron.stdout
    units = cli("schedule", "install", "--print", "systemd").stdout
    assert "[Timer]" in units and "Persistent=true" in units


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("add", "x", "--at", "25:00", "--run", "brief"),
            "--at 25:00 不是时刻：小时只能是 0 到 23",
        ),
        (("add", "x", "--at", "9:5", "--run", "brief"), "分钟要写两位，如 9:05"),
        (("add", "x", "--at", "15:00"), "--run"),
        (("add", "x", "--at", "15:00", "--run", "brief", "--ask", "q"), "只能选一个"),
        (("add", "x", "--at", "15:00", "--days", "someday", "--run", "brief"), "--days"),
        (("add", "x", "--at", "15:00", "--run", "schedule run-due"), "不能再调用"),
        # a typo in a step is refused when added (the parser run-due's `wyckoff ARGS` uses)
        (
            ("add", "x", "--at", "15:00", "--run", "brif --push all"),
            "没有子命令 brif（是不是 brief？）",
        ),
        (("add", "x", "--at", "15:00", "--run", "brief --frmat md"), "没有选项 --frmat"),
        (("add", "x", "--at", "15:00", "--run", "screen --limit x"), "--limit 的值无效"),
        (("add", "x", "--at", "15:00", "--run", "alert chek"), "没有子命令 chek（是不是 check？）"),
        (("add", "x", "--at", "15:00", "--run", "alert"), "`wyckoff alert` 后面缺少子命令"),
        (("add", "x", "--at", "15:00", "--run", "--continue"), "要写一个 wyckoff 子命令"),
        (("add", "after-close", "--run", "data sync", "--run", "brief --psh all"), "--psh"),
        (
            ("add", "x", "--at", "15:00", "--run", "brief --push al"),
            "无法运行：没有名为 al 的推送渠道（还没有添加任何渠道）。",
        ),
        (("pause", "nope"), "没有名为 nope"),
        (("install",), "--print cron"),
    ],
)
def test_bad_schedule_input_says_why(home, args, says):
    result = cli("schedule", *args)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1  # one sentence
    assert json.loads(cli("schedule", "list", "--json").stdout)["schedules"] == []


def test_a_well_formed_step_is_accepted_as_written(home):
    steps = ["wyckoff alert check", "tail --push all", "portfolio cash -1", "brief --format html"]
    added = cli("schedule", "add", "x", "--at", "15:00", *[a for s in steps for a in ("--run", s)])
    assert added.returncode == 0, added.stderr
    (schedule,) = json.loads(cli("schedule", "list", "--json").stdout)["schedules"]
    assert [" ".join(step) for step in schedule["command"]] == [
        "alert check", "tail --push all", "portfolio cash -1", "brief --format html"
    ]  # fmt: skip


def test_a_step_pushing_to_a_channel_the_user_does_not_have_is_refused_when_added(home):
    for name in ("phone", "mail"):
        assert cli("notify", "add", name, "--kind", "wecom", "--url-env", "URL").returncode == 0
    for step in ("brief --push al", "tail --push al"):
        result = cli("schedule", "add", "x", "--at", "15:00", "--run", "data sync", "--run", step)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "没有名为 al 的推送渠道（已有：" in result.stderr and result.stderr.count("\n") == 1
        assert "mail" in result.stderr and "phone" in result.stderr
    assert json.loads(cli("schedule", "list", "--json").stdout)["schedules"] == []
    added = cli("schedule", "add", "x", "--at", "15:00", "--run", "tail --push phone")
    assert added.returncode == 0, added.stderr


def test_a_time_without_its_leading_zero_is_stored_as_hh_mm(home):
    assert cli("schedule", "add", "x", "--at", "9:25", "--run", "brief").returncode == 0
    (stored,) = json.loads(cli("schedule", "list", "--json").stdout)["schedules"]
    assert stored["at"] == "09:25"  # run-due compares it with the clock's HH:MM


def test_a_malformed_injected_time_is_one_sentence(home):
    cli("schedule", "add", "x", "--at", "15:00", "--run", "brief")
    result = cli("schedule", "run-due", env={"WYCKOFF_NOW": "tomorrow"})
    assert result.returncode == 2 and "WYCKOFF_NOW" in result.stderr


def test_the_after_close_preset_runs_its_steps_and_saves_the_brief_without_channels(demo_home):
    day = last_market_day(demo_home)
    cli("alert", "add", "volume", "--scope", "market", "--threshold", "1.5")
    cli("schedule", "add", "after-close")
    assert cli("paper", "reset", "--start", day.isoformat()).returncode == 0
    ran = run_due(day, "15:41")
    assert ran.returncode == 0, ran.stderr
    (run,) = runs()
    assert run["status"] == "ok" and run["detail"].startswith("5 步全部完成")
    log = (demo_home / "schedule" / "logs" / f"after-close-{day.isoformat()}.log").read_text()
    assert "$ wyckoff paper run" in log
    paper = json.loads(cli("paper", "nav", "--json").stdout)
    assert [d["date"] for d in paper["days"]] == [day.strftime("%Y%m%d")]  # booked by the step
    saved = json.loads((demo_home / "briefs" / f"{day.isoformat()}.json").read_text())
    assert saved["paper"]["date"] == day.isoformat()  # the brief, a later step, shows it
    assert "## 纸面账户" in (demo_home / "briefs" / f"{day.isoformat()}.md").read_text()
    history = json.loads(cli("alert", "history", "--json").stdout)["alerts"]
    assert history and [a["message"] for a in saved["alerts"]] == [a["message"] for a in history]


def test_a_run_whose_scheduler_died_is_recorded_as_failed(demo_home):
    import sqlite3

    day = last_market_day(demo_home)
    cli("schedule", "add", "evening", "--at", "15:40", "--run", "alert check")
    dead = spawn_cli("--help")
    dead.communicate(timeout=60)
    with sqlite3.connect(demo_home / "wyckoff.db") as conn:  # what kill -9 mid-run leaves
        conn.execute(
            "INSERT INTO schedule_runs (schedule, day, status, pid) VALUES ('evening', ?, 'running', ?)",
            (day.isoformat(), dead.pid),
        )
    run_due(day, "15:45")
    (run,) = runs()
    assert run["status"] == "failed" and "调度进程意外退出" in run["detail"]


def test_killing_run_due_mid_step_kills_the_step_too(demo_home):
    day = last_market_day(demo_home)
    with socket.socket() as probe:  # a free port makes the step's command line unique
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    step = f"web --no-browser --port {port}"  # a step that runs until it is stopped
    cli("schedule", "add", "forever", "--at", "15:40", "--run", step)
    command = f"{sys.executable} -m wyckoff {step}"
    with killed_afterwards(command):
        scheduler = spawn_cli("schedule", "run-due", env=at(day, "15:41"))
        assert eventually(lambda: bool(running(command)), timeout=60)
        scheduler.kill()  # kill -9, mid-step
        scheduler.communicate(timeout=60)
        assert eventually(lambda: not running(command), timeout=10)
    run_due(day, "15:42")
    (run,) = runs()
    assert run["status"] == "failed" and "调度进程意外退出" in run["detail"]


def test_a_data_source_down_fails_the_run_with_its_sentence_and_writes_no_brief(demo_home):
    day = last_market_day(demo_home)
    assert cli("data", "use", "baostock").returncode == 0  # its server is out of reach here
    cli("schedule", "add", "after-close")
    ran = run_due(day, "15:41")
    assert ran.returncode == 1
    (run,) = runs()
    assert run["status"] == "failed" and run["detail"].startswith(
        "第 1 步 `wyckoff data sync` 失败"
    )
    assert "Traceback" not in run["detail"] and not (demo_home / "briefs").exists()
