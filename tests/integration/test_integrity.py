"""Several processes on one home, crashes at the worst moment, and the store they leave."""

from __future__ import annotations

import json
import operator
import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from tests.conftest import add_scripted_model, cli, cli_process, marked_data, spawn_cli
from tests.model_servers import Reply
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.engine.demo import build_demo_market
from wyckoff.engine.market_store import MarketStore, MarketStoreBusy
from wyckoff.store import Store


def finish(processes) -> list[tuple[int, str, str]]:
    return [(p.wait(timeout=180), *p.communicate()) for p in processes]


def assert_clean(results) -> None:
    for code, out, err in results:
        assert code == 0, err
        assert "Traceback" not in out + err


def test_parallel_first_runs_on_a_fresh_home_all_work(home):
    results = finish([spawn_cli("portfolio", "list", "--json") for _ in range(6)])
    assert_clean(results)
    assert all(json.loads(out)["positions"] == [] for _, out, _ in results)


def test_market_readers_run_side_by_side(home, install_demo):
    install_demo(home, 300)
    cli("data", "use", "demo")
    runs = [spawn_cli("analyze", "000001", "--json") for _ in range(3)]
    runs += [spawn_cli("market", "--json") for _ in range(2)]
    results = finish(runs)
    assert_clean(results)
    assert json.loads(results[0][1])["code"] == "000001"
    assert json.loads(results[-1][1])["source"] == "demo"


# --- the state db's version ------------------------------------------------------------------


def state_db_at_version(home, version: int) -> sqlite3.Connection:
    """A wyckoff.db as a Wyckoff that knew the first `version` migrations left it."""
    from wyckoff.store import DB_FILE, MIGRATIONS

    home.mkdir()
    conn = sqlite3.connect(home / DB_FILE, isolation_level=None)
    conn.executescript(";\n".join(MIGRATIONS[:version]))
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def test_a_state_db_from_an_older_version_is_migrated_and_keeps_its_sessions(home):
    from wyckoff.store import MIGRATIONS

    old = state_db_at_version(home, 4)  # before background tasks knew their process
    old.execute("INSERT INTO sessions (id, title) VALUES ('s1', '旧会话')")
    old.execute(
        "INSERT INTO messages (session_id, seq, role, content)"
        " VALUES ('s1', 1, 'user', '你好'), ('s1', 2, 'assistant', '你好！')"
    )
    old.close()
    listed = cli("session", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(s["id"], s["title"]) for s in json.loads(listed.stdout)["sessions"]] == [
        ("s1", "旧会话")
    ]
    assert cli("memory", "list").returncode == 0  # a table of a later migration
    conn = sqlite3.connect(home / "wyckoff.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(background_tasks)")]
    assert "owner_pid" in columns


def test_a_state_db_from_a_newer_version_is_refused_and_left_alone(home):
    from wyckoff.store import MIGRATIONS

    newer = state_db_at_version(home, len(MIGRATIONS))
    newer.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    before = newer.execute(schema).fetchall()
    refused = cli("session", "list")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "来自更新版本的 Wyckoff" in refused.stderr and "请升级 Wyckoff" in refused.stderr
    assert newer.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    assert newer.execute(schema).fetchall() == before


# --- the chat log --------------------------------------------------------------------------


def saved_session(home, count: int) -> tuple[ChatLog, str]:
    log = ChatLog(Store.in_home(home))
    session_id = log.create_session()
    for number in range(count):
        role = "user" if number % 2 == 0 else "assistant"
        log.append(session_id, {"role": role, "content": f"消息 {number}"})
    return log, session_id


def test_every_change_to_a_conversation_reaches_the_chat_log(home):
    home.mkdir()
    log = ChatLog(Store.in_home(home))
    conversation = Conversation.start(log)
    saved = lambda: log.load(conversation.session_id)  # noqa: E731
    conversation.append({"role": "user", "content": "茅台怎么样"})
    conversation.append({"role": "assistant", "content": "偏强"})
    assert saved() == list(conversation) and len(conversation) == 2
    conversation.replace_all([{"role": "user", "content": "[对话摘要] 问过茅台"}])
    conversation.append({"role": "user", "content": "那平安银行呢"})
    assert saved() == list(conversation) and conversation[-1]["content"] == "那平安银行呢"
    extra = {"role": "user", "content": "没有保存的消息"}
    changes = [
        lambda c: c.extend([extra]),
        lambda c: c.insert(0, extra),
        lambda c: operator.iadd(c, [extra]),
        lambda c: operator.setitem(c, slice(None), [extra]),
        lambda c: operator.setitem(c, 0, extra),
        lambda c: operator.delitem(c, 0),
        lambda c: c.pop(),
        lambda c: c.clear(),
    ]
    for change in changes:  # a change that would skip the chat log does not exist
        with pytest.raises((AttributeError, TypeError)):
            change(conversation)
    conversation[:].append(extra)  # a slice is a copy
    assert saved() == list(conversation) and len(conversation) == 2


def test_a_chat_log_from_before_message_kinds_still_tells_the_user_apart(home):
    import sqlite3

    from wyckoff.cli.messages import kind_of
    from wyckoff.store import MIGRATIONS, _statements

    home.mkdir()
    old = sqlite3.connect(home / "wyckoff.db")
    for migration in MIGRATIONS[:6]:  # the schema before messages had a kind
        for statement in _statements(migration):
            old.execute(statement)
    old.execute("PRAGMA user_version = 6")
    rows = [
        ("lone", 1, "user", "[SYSTEM NOTIFICATION - NOT USER INPUT]\n筛选完成"),
        ("lone", 2, "assistant", "筛选完成。"),
        ("asked", 1, "user", "[对话摘要]\n前文"),
        ("asked", 2, "user", "我有什么持仓？"),
        ("asked", 3, "user", "[系统提醒] 回答持仓问题需要真实持仓数据。"),
        ("asked", 4, "assistant", "你持有 600519。"),
        (
            "skill",
            1,
            "user",
            "/diagnose 600519\n\n[用户调用了技能 /diagnose：请先调用 execute_skill]",
        ),
        ("skill", 2, "assistant", "600519 健康。"),
    ]
    old.executemany("INSERT INTO sessions (id) VALUES (?)", [("lone",), ("asked",), ("skill",)])
    old.executemany(
        "INSERT INTO messages (session_id, seq, role, content) VALUES (?, ?, ?, ?)", rows
    )
    old.commit()
    old.close()
    log = ChatLog(Store.in_home(home))
    loaded = log.load("asked")
    assert [kind_of(m) for m in loaded] == ["compaction_summary", None, "tool_retry", None]
    assert kind_of(log.load("lone")[0]) == "notification"
    skill_call, _ = log.load("skill")  # shown as typed, sent with the instruction
    assert skill_call["meta"]["shown"] == "/diagnose 600519" and kind_of(skill_call) is None
    titles = {s["id"]: s["title"] for s in log.list_sessions()}
    assert titles == {"asked": "我有什么持仓？", "skill": "/diagnose 600519"}


def test_a_compaction_that_fails_midway_keeps_the_old_history(home):
    home.mkdir()
    log, session_id = saved_session(home, 8)
    compacted = [
        {"role": "user", "content": "[对话摘要] 前文"},
        {"role": "assistant", "content": "坏的\ud800文本"},  # cannot be stored
        {"role": "user", "content": "消息 7"},
    ]
    with pytest.raises(UnicodeEncodeError):
        log.replace_messages(session_id, compacted)
    assert [m["content"] for m in log.load(session_id)] == [f"消息 {n}" for n in range(8)]


def test_a_kill_during_the_compaction_rewrite_keeps_the_old_history(home):
    home.mkdir()
    log, session_id = saved_session(home, 8)
    script = (
        "import sys; from pathlib import Path; from wyckoff.store import Store;"
        "from wyckoff.cli.chat_log import ChatLog;"
        "ChatLog(Store.in_home(Path(sys.argv[1]))).replace_messages(sys.argv[2],"
        " [{'role': 'user', 'content': '摘要'}])"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(home), session_id],
        env={**os.environ, "WYCKOFF_CRASH_AT": "chat-log-rewrite"},
        timeout=60,
    )
    assert run.returncode == -signal.SIGKILL
    assert len(log.load(session_id)) == 8


def test_a_session_in_use_by_another_process_is_busy(home, openai_server):
    add_scripted_model(openai_server, "local")
    openai_server.script(Reply(text="第一个回答"))
    assert cli("ask", "第一个问题").returncode == 0
    answer = threading.Event()
    openai_server.script(Reply(text="慢的回答", hold=answer), Reply(text="不该出现"))
    asked = len(openai_server.requests) + 1
    slow = spawn_cli("ask", "第二个问题", "--continue")
    assert openai_server.wait_for_requests(asked), "the slow ask never reached the model"
    busy = cli("ask", "第三个问题", "--continue")
    answer.set()
    code, out, err = finish([slow])[0]
    assert code == 0 and out.strip() == "慢的回答", err
    assert busy.returncode == 2 and "正忙" in busy.stderr and "Traceback" not in busy.stderr
    log = ChatLog(Store.in_home(home))
    contents = [m["content"] for m in log.load(log.latest_session())]
    assert contents == ["第一个问题", "第一个回答", "第二个问题", "慢的回答"]


# --- the demo store --------------------------------------------------------------------------


def partial_demo_store(home) -> MarketStore:
    """What the old build left when killed between its commits: stocks and bars, no indices."""
    home.mkdir()
    market = build_demo_market(limit=50, days=300)
    store = MarketStore.for_source(home, "demo")
    store.upsert("stocks", market["stocks"])
    store.upsert("bars", market["bars"].assign(adj_factor=1.0))
    return store


def test_a_demo_build_killed_midway_leaves_nothing_half_built_and_status_repairs(home):
    store = partial_demo_store(home)
    assert cli_process(
        "data", "use", "demo", env={"WYCKOFF_CRASH_AT": "demo-build"}
    ).returncode == (-signal.SIGKILL)
    assert store.status()["indices"] == 0  # the killed build did not touch the store in use
    status = cli("data", "status", "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["indices"] == 6 and info["stocks"] == info["stocks_with_bars"] > 5000
    assert "已重新生成" in status.stderr
    assert sorted(p.name for p in home.iterdir() if "market-demo" in p.name) == [
        "market-demo.duckdb",
        "market-demo.duckdb.lock",
    ]
    market = cli("market", "--json")
    assert market.returncode == 0 and len(json.loads(market.stdout)["indices"]) == 6


def test_data_use_demo_builds_the_store_at_once(home):
    result = cli("data", "use", "demo")
    assert result.returncode == 0, result.stderr
    assert "演示行情库已生成" in result.stderr
    info = MarketStore.for_source(home, "demo").status()
    assert info["indices"] == 6 and info["bars"] == info["stocks_with_bars"] * 800


# --- background tasks ------------------------------------------------------------------------


def test_a_background_task_of_a_killed_process_is_failed_not_running(home, openai_server):
    add_scripted_model(openai_server, "local")
    openai_server.script(Reply(tool_calls=[("screen_stocks", {})]))
    killed = cli_process("ask", "全市场筛选", env={"WYCKOFF_CRASH_AT": "background-task"})
    assert killed.returncode == -signal.SIGKILL
    openai_server.script(Reply(tool_calls=[("check_background_tasks", {})]), Reply(text="好"))
    assert cli("ask", "筛选好了吗？", "--continue").returncode == 0
    agent_requests = [body for body in openai_server.bodies if body.get("tools")]
    content = agent_requests[-1]["messages"][-1]["content"]
    tool_result = json.loads(marked_data(content, "check_background_tasks"))
    (task,) = tool_result["tasks"]
    assert task["tool"] == "screen_stocks" and task["status"] == "failed"
    assert task["error"].startswith("进程已退出")


# --- everything at once ----------------------------------------------------------------------


def test_eight_processes_on_one_home_lose_nothing(home, openai_server, install_demo):
    install_demo(home, 300)
    cli("data", "use", "demo")
    add_scripted_model(openai_server, "local")
    openai_server.script(*[Reply(text="回答完毕。") for _ in range(3)])
    runs = [spawn_cli("ask", f"问题 {n}", "-o", "json") for n in range(3)]
    runs += [
        spawn_cli("portfolio", "add", code, "--shares", "100", "--cost", "10")
        for code in ("000001", "000002")
    ]
    runs += [spawn_cli("portfolio", "cash", "5000")]
    runs += [spawn_cli("analyze", "000001", "--json"), spawn_cli("market", "--json")]
    results = finish(runs)
    assert_clean(results)
    sessions = {json.loads(out)["session_id"] for _, out, _ in results[:3]}
    log = ChatLog(Store.in_home(home))
    for session_id in sessions:
        assert [m["role"] for m in log.load(session_id)] == ["user", "assistant"]
    book = json.loads(cli("portfolio", "list", "--json").stdout)
    assert [p["code"] for p in book["positions"]] == ["000001", "000002"]
    assert book["cash"] == 5000.0
    assert len(json.loads(cli("portfolio", "history", "--json").stdout)["history"]) == 3


def test_a_reader_waits_for_a_writer_and_then_says_the_store_is_busy(
    home, monkeypatch, install_demo
):
    store = install_demo(home, 50)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE_LOCK, str(store.path), "3"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "holding"
    monkeypatch.setattr("wyckoff.engine.market_store.LOCK_WAIT_S", 0.5)
    with pytest.raises(MarketStoreBusy, match="正被另一个 Wyckoff 进程占用"):
        store.stocks()
    monkeypatch.setattr("wyckoff.engine.market_store.LOCK_WAIT_S", 60.0)
    assert len(store.stocks()) == 50  # waits until the writer is done
    assert holder.wait(timeout=30) == 0


HOLD_WRITE_LOCK = """
import sys, time, duckdb
conn = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.close()
"""


HOLD_SESSION = """
import sys, time
from pathlib import Path
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.store import Store
hold = ChatLog(Store.in_home(Path(sys.argv[1]))).hold(sys.argv[2])
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
"""


@pytest.mark.asyncio
async def test_the_tui_says_a_session_is_busy_instead_of_resuming_it(home, openai_server):
    from tests.tui.test_tui import notices, submit, wait_until
    from wyckoff.cli.tui.app import create_app

    add_scripted_model(openai_server, "local")
    openai_server.script(Reply(text="回答"))
    assert cli("ask", "问题").returncode == 0
    log = ChatLog(Store.in_home(home))
    busy_session = log.latest_session()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SESSION, str(home), busy_session, "30"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        app = create_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "/new")
            current = app.agent.conversation.session_id
            app.resume(busy_session)
            await wait_until(pilot, lambda: any("正忙" in n for n in notices(app)))
            assert app.agent.conversation.session_id == current
    finally:
        holder.kill()
        holder.wait()


def test_a_market_store_from_an_older_version_gains_new_tables_on_read(home):
    import duckdb

    home.mkdir()
    store = MarketStore.for_source(home, "demo")
    conn = duckdb.connect(str(store.path))
    conn.execute("CREATE TABLE sync_state (key VARCHAR PRIMARY KEY, value VARCHAR)")
    conn.close()
    assert store.get_state("built_at") is None and store.status()["bars"] == 0


def test_a_fork_keeps_every_message_as_it_was_saved(home):
    from wyckoff.cli.messages import synthetic

    home.mkdir()
    log = ChatLog(Store.in_home(home))
    session_id = log.create_session()
    saved = [
        {
            "role": "user",
            "content": "/checkup\n\n[用户调用了技能 /checkup：…]",
            "meta": {"shown": "/checkup"},
        },
        {
            "role": "assistant",
            "content": "体检完成。",
            "meta": {"model": "m", "provider": "openai"},
        },
        synthetic("notification", "[SYSTEM NOTIFICATION - NOT USER INPUT]\n筛选完成"),
    ]
    for message in saved:
        log.append(session_id, message)
    fork_id = log.fork(session_id)
    assert log.load(fork_id) == log.load(session_id)
    assert log.load(fork_id)[0]["meta"]["shown"] == "/checkup"
