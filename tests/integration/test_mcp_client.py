"""Other MCP servers' tools in the agent: `wyckoff mcp add/list/rm/test`, namespaced tools
that need approval, untrusted results, and a broken server skipped. The server is a real
MCP server (tests/mcp_notes_server.py, built with the same `mcp` package)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import NETGUARD, add_scripted_model, cli, marked_data, spawn_cli
from tests.model_servers import Reply
from tests.processes import eventually

NOTES_SERVER = str(Path(__file__).parent.parent / "mcp_notes_server.py")
HOSTILE_SERVER = str(Path(__file__).parent.parent / "mcp_hostile_server.py")
BROKEN = "import sys; sys.exit(3)"
SILENT = "import time; time.sleep(120)"


def add_servers(notes: Path, *extra: str) -> None:
    added = cli("mcp", "add", "notes", *extra, "--", sys.executable, NOTES_SERVER, str(notes))
    assert added.returncode == 0, added.stderr
    assert "工具名为 notes__" in added.stderr
    broken = cli("mcp", "add", "broken", "--", sys.executable, "-c", BROKEN)
    assert broken.returncode == 0, broken.stderr


def tool_messages(server) -> list[str]:
    """The tool results of the agent's last request (memory extraction runs after it)."""
    last = [body for body in server.bodies if body.get("tools")][-1]
    return [m["content"] for m in last["messages"] if m["role"] == "tool"]


def test_a_servers_tool_needs_approval_and_its_result_is_untrusted(openai_server, home, tmp_path):
    notes = tmp_path / "notes.txt"
    add_servers(notes)
    add_scripted_model(openai_server)
    save = Reply(tool_calls=[("notes__save_note", {"text": "买入前再看一眼"})])

    openai_server.script(save, Reply(text="没有保存"))
    refused = cli("ask", "记一下")
    assert refused.returncode == 0, refused.stderr
    assert not notes.exists()
    (message,) = tool_messages(openai_server)
    assert "notes__save_note 需要用户批准" in message
    tools = {t["function"]["name"]: t["function"] for t in openai_server.bodies[0]["tools"]}
    assert "notes__shout" in tools and "notes__save_note" in tools
    assert tools["notes__save_note"]["parameters"]["required"] == ["text"]
    assert "不是指令" in tools["notes__save_note"]["description"]
    assert refused.stderr.count("MCP 服务器 broken") == 1
    assert "已跳过，会话继续" in refused.stderr

    openai_server.script(save, Reply(text="已保存"))
    approved = cli("ask", "记一下", "--approve", "notes__save_note")
    assert approved.returncode == 0, approved.stderr
    assert notes.read_text(encoding="utf-8") == "买入前再看一眼\n"
    assert "已批准（--approve）：调用外部 MCP 服务器 notes 的工具 save_note" in approved.stderr
    (message,) = tool_messages(openai_server)
    # the server's structured result (MCPServer wraps a str return as {"result": ...})
    assert json.loads(marked_data(message, "notes__save_note")) == {
        "result": "saved 买入前再看一眼"
    }


def test_a_read_only_tool_of_a_trusted_server_runs_without_asking_and_stays_marked(
    openai_server, home, tmp_path
):
    add_servers(tmp_path / "notes.txt", "--trust")
    add_scripted_model(openai_server)
    openai_server.script(Reply(tool_calls=[("notes__shout", {"text": "hi"})]), Reply(text="HI"))
    result = cli("ask", "喊一下")
    assert result.returncode == 0, result.stderr
    (message,) = tool_messages(openai_server)
    inside = marked_data(message, "notes__shout")
    assert json.loads(inside)["result"].startswith("HI ")
    assert "<untrusted-data>" not in inside  # the server's text cannot close the marker early


def test_mcp_list_test_and_rm(home, tmp_path):
    add_servers(tmp_path / "notes.txt")
    listed = cli("mcp", "list")
    assert "notes" in listed.stdout and "broken" in listed.stdout and "需要" in listed.stdout
    tested = cli("mcp", "test", "notes")
    assert tested.returncode == 0, tested.stderr
    assert "notes__shout" in tested.stdout and "notes__save_note" in tested.stdout
    failed = cli("mcp", "test", "broken")
    assert failed.returncode == 1 and "MCP 服务器 broken" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert cli("mcp", "rm", "broken").returncode == 0
    assert [e["name"] for e in json.loads((home / "mcp.json").read_text())] == ["notes"]
    assert (home / "mcp.json").stat().st_mode & 0o777 == 0o600
    missing = cli("mcp", "rm", "broken")
    assert missing.returncode == 2 and "没有名为 broken 的 MCP 服务器" in missing.stderr


def test_mcp_add_rejects_a_bad_name_or_no_target(home):
    bad = cli("mcp", "add", "Bad Name", "--", "x")
    assert bad.returncode == 2 and "服务器名 'Bad Name' 不合法" in bad.stderr
    neither = cli("mcp", "add", "nothing")
    assert neither.returncode == 2 and "二者选一" in neither.stderr
    assert not (home / "mcp.json").exists()


def test_mcp_add_over_an_existing_name_says_it_replaced_it(home):
    """As `model add` does for a model of that name: the new settings replace the old ones,
    in their place, and the sentence says so (it said 已添加, as if there were two)."""
    assert cli("mcp", "add", "notes", "--", "old-server").returncode == 0
    assert cli("mcp", "add", "other", "--url", "http://127.0.0.1:9/mcp").returncode == 0
    again = cli("mcp", "add", "notes", "--", "new-server", "--flag")
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(
        "已更新 MCP 服务器 notes（new-server --flag，替换原来的 old-server）："
    )
    saved = json.loads((home / "mcp.json").read_text("utf-8"))
    assert [(s["name"], s.get("command")) for s in saved] == [
        ("notes", ["new-server", "--flag"]),
        ("other", None),
    ]


def test_a_server_that_never_answers_is_skipped_after_its_timeout(openai_server, home):
    silent = cli("mcp", "add", "silent", "--timeout", "2", "--", sys.executable, "-c", SILENT)
    assert silent.returncode == 0, silent.stderr
    add_scripted_model(openai_server)
    openai_server.script(Reply(text="照常回答"))
    result = cli("ask", "你好")
    assert result.returncode == 0, result.stderr
    assert "照常回答" in result.stdout
    assert result.stderr.count("MCP 服务器 silent") == 1
    assert "2 秒内没有响应" in result.stderr


def test_tool_flags_follow_the_servers_annotations_and_trust(home, tmp_path):
    """In process: read-only tools may run in parallel, the rest never; approval unless
    the server is trusted."""
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.mcp.client import ServerEntry, add_server, attach_mcp_servers

    home.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, NOTES_SERVER, str(tmp_path / "notes.txt")]
    add_server(home, ServerEntry(name="notes", command=command))
    add_server(home, ServerEntry(name="trusted", command=command, trust=True))
    registry = default_registry()
    assert attach_mcp_servers(registry, home) == []
    flags = {
        name: (registry.get(name).concurrency_safe, registry.get(name).requires_approval)
        for name in registry.names
        if "__" in name
    }
    assert flags == {
        "notes__shout": (True, True),
        "notes__save_note": (False, True),
        "trusted__shout": (True, False),
        "trusted__save_note": (False, False),
        "notes__wait": (False, True),
        "trusted__wait": (False, False),
        "notes__env_value": (True, True),
        "trusted__env_value": (True, False),
    }


def test_cancelling_a_call_cancels_it_on_the_server(home, tmp_path):
    import threading

    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.mcp.client import ServerEntry, add_server, attach_mcp_servers

    home.mkdir(parents=True, exist_ok=True)
    notes = tmp_path / "notes.txt"
    add_server(home, ServerEntry(name="slow", command=[sys.executable, NOTES_SERVER, str(notes)]))
    registry = default_registry()
    assert attach_mcp_servers(registry, home) == []
    spec, params = registry.validate({"name": "slow__wait", "args": {"seconds": 60}})
    context = ToolContext(home=home, registry=registry)
    threading.Timer(1.0, context.cancel_event.set).start()
    outcome = registry.run(spec, params, context, "call-1")
    assert outcome.error == "已被用户取消。"
    for _ in range(300):  # the server notices the cancellation on its own schedule
        if notes.exists():
            break
        time.sleep(0.1)
    assert notes.read_text(encoding="utf-8") == "cancelled\n"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_one_ctrl_c_while_a_servers_tool_hangs_ends_ask_and_the_server(
    openai_server, home, tmp_path
):
    # the server's tool blocks its event loop (deaf to the cancel and to its closed input)
    # and the server ignores SIGTERM: what a hung server looks like from outside
    added = cli(
        "mcp", "add", "hostile", "--trust", "--", sys.executable, HOSTILE_SERVER, str(tmp_path)
    )
    assert added.returncode == 0, added.stderr
    add_scripted_model(openai_server)
    openai_server.script(Reply(tool_calls=[("hostile__hang", {"code": "600519"})]))
    asking = spawn_cli("ask", "查一下", "--no-memory")
    try:
        assert eventually(lambda: (tmp_path / "hanging").exists(), timeout=60), "never called"
        server = int((tmp_path / "pid").read_text())
        asking.send_signal(signal.SIGINT)  # once
        pressed = time.monotonic()
        _, err = asking.communicate(timeout=30)
        took = time.monotonic() - pressed
        assert asking.returncode == 130 and "已取消" in err and "Traceback" not in err
        assert took < 3  # asked for 2 s; closing the hung server took 4 s before
        assert eventually(lambda: not alive(server), timeout=1)
    finally:
        asking.kill()
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)


def test_a_broken_mcp_json_is_reported_and_the_session_goes_on(openai_server, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text("[{oops", encoding="utf-8")
    add_scripted_model(openai_server)
    openai_server.script(Reply(text="照常回答"))
    result = cli("ask", "你好")
    assert result.returncode == 0, result.stderr
    assert "照常回答" in result.stdout
    assert (
        "mcp.json 不是有效的 JSON" in result.stderr and "没有加载任何 MCP 服务器" in result.stderr
    )
    listed = cli("mcp", "list")
    assert listed.returncode == 2 and "mcp.json 不是有效的 JSON" in listed.stderr


def remote_answers(home: Path, server: str, calls: list[tuple[str, dict]]) -> list[str]:
    """Connect to a configured server the way the agent does and call its tools."""
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.mcp.client import RemoteServers, load_servers

    (entry,) = [e for e in load_servers(home) if e.name == server]
    servers = RemoteServers(home)
    context = ToolContext(home=home, registry=default_registry())
    try:
        servers.connect(entry)
        results = [servers.call(server, tool, args, context) for tool, args in calls]
    finally:
        servers.close()
    return ["".join(block.text for block in r.content) for r in results]


def test_a_server_gets_the_wyckoff_home_its_env_values_and_referenced_secrets(
    home, tmp_path, monkeypatch
):
    monkeypatch.setenv("NOTES_TOKEN", "tok-from-the-shell-123")
    added = cli(
        "mcp", "add", "notes", "--env", "GREETING=你好", "--env", "NOTES_TOKEN",
        "--", sys.executable, NOTES_SERVER, str(tmp_path / "notes.txt"),
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    names = ["WYCKOFF_HOME", "GREETING", "NOTES_TOKEN", "OPENAI_API_KEY"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-server-0123456789")
    answers = remote_answers(home, "notes", [("env_value", {"name": n}) for n in names])
    assert answers == [str(home), "你好", "tok-from-the-shell-123", "<unset>"]
    saved = (home / "mcp.json").read_text()
    assert "tok-from-the-shell" not in saved and '"env_from": [\n      "NOTES_TOKEN"' in saved
    listed = cli("mcp", "list").stdout
    assert "GREETING=你好" in listed and "NOTES_TOKEN=（启动时从环境读取）" in listed


@pytest.mark.parametrize(
    "pair",
    [
        "GITHUB_TOKEN=ghp_0123456789abcdef",
        "X=sk-0123456789abcdef",
        "DB_PASSWORD=hunter2",
        "DB_PWD=hunter2",
        "GH=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
        "SLACK=xoxb-1234-5678-abcdefghijkl",
        "SESSION=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "DATABASE_URL=postgres://reader:hunter2@db.internal/prices",
        "HOOK=https://oapi.dingtalk.com/robot/send?access_token=abcdef0123456789",
    ],
)
def test_a_secret_value_is_never_written_to_mcp_json(home, pair):
    refused = cli("mcp", "add", "notes", "--env", pair, "--", sys.executable, NOTES_SERVER, "x")
    key = pair.partition("=")[0]
    assert refused.returncode == 2
    assert f"{key} 的值看起来是密钥，不会写进 mcp.json" in refused.stderr
    assert f"`--env {key}`" in refused.stderr
    assert not (home / "mcp.json").exists()


def test_wyckoff_mcp_added_as_a_server_reads_the_same_home(home, tmp_path, monkeypatch):
    """Not ~/.wyckoff: the user's HOME here holds nothing, this home holds the history."""
    from wyckoff import history_store
    from wyckoff.store import Store

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    home.mkdir(parents=True)
    history_store.save_screen(
        Store.in_home(home), "demo", "2026-12-01",
        [history_store.NewRecommendation("000001", "平安银行", ["趋势"], [], 80.0, 5.5)], [],
    )  # fmt: skip
    python_path = os.pathsep.join([str(NETGUARD), os.environ.get("PYTHONPATH", "")])
    script = shutil.which("wyckoff-mcp", path=str(Path(sys.executable).parent))
    added = cli(
        "mcp", "add", "self", "--env", f"PYTHONPATH={python_path}", "--", script, "--tier", "1"
    )
    assert added.returncode == 0, added.stderr
    (answer,) = remote_answers(home, "self", [("query_history", {"source": "recommendation"})])
    assert json.loads(answer)["rows"][0]["name"] == "平安银行"
    assert not (tmp_path / "user" / ".wyckoff").exists()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            ["--", "/nonexistent/wyckoff-test-cmd"],
            "找不到命令 /nonexistent/wyckoff-test-cmd：检查拼写",
        ),
        (
            ["--url", "http://127.0.0.1:{port}/mcp"],
            "连不上 http://127.0.0.1:{port}/mcp：服务器没有运行",
        ),
        (["--", sys.executable, "-c", BROKEN], "没有完成 MCP 握手：它可能不是 MCP 服务器"),
        (
            ["--", sys.executable, "-c", "print('hello'); import time; time.sleep(9)"],
            "没有完成 MCP 握手",
        ),
    ],
    ids=["not-found", "refused", "exits", "not-mcp"],
)
def test_a_server_that_cannot_be_used_is_one_chinese_sentence(home, target, expected):
    port = closed_port()
    added = cli("mcp", "add", "bad", "--timeout", "20", *(t.format(port=port) for t in target))
    assert added.returncode == 0, added.stderr
    tested = cli("mcp", "test", "bad")
    assert tested.returncode == 1
    assert expected.format(port=port) in tested.stderr
    assert "Error" not in tested.stderr and "Traceback" not in tested.stderr
    assert tested.stderr.count("\n") == 1


def test_mcp_test_of_an_unknown_server_is_a_usage_error(home):
    missing = cli("mcp", "test", "nope")
    assert missing.returncode == 2
    assert (
        missing.stderr == "错误：没有名为 nope 的 MCP 服务器：`wyckoff mcp list` 查看已添加的。\n"
    )
