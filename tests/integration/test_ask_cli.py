"""Headless `wyckoff ask`, `session` and `trace`, run as subprocesses against scripted servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.conftest import NETGUARD, add_scripted_model, cli
from tests.model_servers import Reply


@pytest.fixture
def configured(home, openai_server):
    add_scripted_model(openai_server, "local")
    return openai_server


def test_text_output_streams_the_answer_to_stdout(configured):
    configured.script(
        Reply(tool_calls=[("check_background_tasks", {})]), Reply(text="市场整体偏强。")
    )
    result = cli("ask", "今天市场怎么样？")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "市场整体偏强。"
    assert "查看后台任务" in result.stderr and "✓ check_background_tasks" in result.stderr


def test_json_output_is_one_object(configured):
    configured.script(
        Reply(tool_calls=[("check_background_tasks", {})]), Reply(text="好", usage=(10, 2, 0, 0))
    )
    result = cli("ask", "hi", "--output", "json")
    payload = json.loads(result.stdout)
    assert payload["text"] == "好" and payload["status"] == "completed" and payload["session_id"]
    assert (
        payload["usage"]["input_tokens"] == 110
        and payload["tool_calls"][0]["name"] == "check_background_tasks"
    )


def test_stream_json_lines_all_parse_and_end_with_done(configured):
    configured.script(Reply(text="一二三四五六", pieces=3))
    result = cli("ask", "hi", "-o", "stream-json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "model_start" and events[-1]["type"] == "done"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "一二三四五六"


def test_question_from_stdin_and_continue(configured):
    configured.script(Reply(text="记住了，你关注 600519。"), Reply(text="你关注的是 600519。"))
    first = cli("ask", "-", input_text="我关注 600519\n")
    assert first.returncode == 0
    second = cli("ask", "我关注哪只？", "--continue")
    assert second.stdout.strip() == "你关注的是 600519。"
    sent = [m["content"] for m in configured.bodies[1]["messages"] if m["role"] != "system"]
    assert sent == ["我关注 600519", "记住了，你关注 600519。", "我关注哪只？"]


def test_exit_codes(configured, home):
    configured.script(Reply(status=404, error_message="model not found"))
    failed = cli("ask", "hi")
    assert (
        failed.returncode == 1
        and "找不到模型" in failed.stderr
        and "Traceback" not in failed.stderr
    )

    configured.script(*[Reply(tool_calls=[("check_background_tasks", {})]) for _ in range(3)])
    limited = cli("ask", "hi", "--max-rounds", "2")
    assert limited.returncode == 3

    unknown = cli("ask", "hi", "--approve", "rm_rf")
    assert unknown.returncode == 2 and "未知的工具" in unknown.stderr

    empty = cli("ask", "  ")
    assert empty.returncode == 2


def test_no_model_configured_is_a_usage_error(home):
    result = cli("ask", "hi")
    assert result.returncode == 2 and "还没有配置模型" in result.stderr


def test_ctrl_c_cancels_with_exit_130(configured):
    never = threading.Event()  # no answer before the user presses Ctrl+C
    configured.script(Reply(text="慢慢说", hold=never))
    env = {**os.environ, "PYTHONPATH": str(NETGUARD)}
    process = subprocess.Popen(
        [sys.executable, "-m", "wyckoff", "ask", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert configured.wait_for_requests(1), "the model was never called"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    never.set()
    assert process.returncode == 130 and "已取消" in err and "Traceback" not in err


def test_sessions_and_traces_are_listed_shown_exported_and_forked(configured):
    configured.script(Reply(tool_calls=[("check_background_tasks", {})]), Reply(text="答案一"))
    session_id = json.loads(cli("ask", "问题一", "-o", "json").stdout)["session_id"]

    listed = json.loads(cli("session", "list", "--json").stdout)["sessions"]
    assert (
        listed[0]["id"] == session_id
        and listed[0]["title"] == "问题一"
        and listed[0]["messages"] == 4
    )
    shown = cli("session", "show", session_id).stdout
    assert "问题一" in shown and "答案一" in shown and "check_background_tasks" in shown
    exported = json.loads(cli("session", "export", session_id, "--format", "json").stdout)
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant", "tool", "assistant"]
    fork_id = cli("session", "fork", session_id).stdout.strip()
    assert fork_id != session_id
    assert (
        len(json.loads(cli("session", "export", fork_id, "--format", "json").stdout)["messages"])
        == 4
    )
    missing = cli("session", "show", "nope")
    assert missing.returncode == 2 and "没有找到会话 nope" in missing.stderr

    traces = json.loads(cli("trace", "list", "--json").stdout)["traces"]
    assert traces[0]["session_id"] == session_id and traces[0]["status"] == "completed"
    lines = cli("trace", "show", traces[0]["id"]).stdout.splitlines()
    assert json.loads(lines[0])["type"] == "init" and json.loads(lines[-1])["type"] == "final"


def test_trace_list_shows_when_each_turn_began_in_the_users_zone(configured):
    from datetime import UTC, datetime, timedelta

    nine_east = {"TZ": "XYZ-9"}  # POSIX: UTC+9
    configured.script(Reply(text="好"))
    assert cli("ask", "问题", env=nine_east).returncode == 0
    shown = cli("trace", "list", env=nine_east).stdout
    assert "时间（本地时间 UTC+09:00）" in shown and "│ 完成 │" in shown
    (trace,) = json.loads(cli("trace", "list", "--json").stdout)["traces"]
    began = datetime.strptime(trace["id"][:15], "%Y%m%d-%H%M%S")
    now_there = datetime.now(UTC).replace(tzinfo=None) + timedelta(hours=9)
    assert abs(now_there - began) < timedelta(minutes=5)
    assert began.strftime("%Y-%m-%d %H:%M:%S") in shown
    first = json.loads(cli("trace", "show", trace["id"]).stdout.splitlines()[0])
    assert first["ts"].endswith("+09:00")


def test_text_output_gives_each_tool_result_in_one_chinese_line(configured, home, install_demo):
    install_demo(home, 100)
    cli("data", "use", "demo")
    configured.script(Reply(tool_calls=[("get_market_overview", {})]), Reply(text="偏强。"))
    result = cli("ask", "大盘怎么样？")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "✓ get_market_overview" in line]
    assert "上证指数" in line and "市场状态" in line and "演示数据" in line


def test_the_agent_reads_a_numeric_code_as_the_six_digit_one(configured, home, install_demo):
    install_demo(home, 100)
    cli("data", "use", "demo")
    configured.script(Reply(tool_calls=[("analyze_stock", {"code": 1})]), Reply(text="看完了。"))
    result = cli("ask", "平安银行怎么样？")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "✓ analyze_stock" in line]
    assert "000001 平安银行" in line
