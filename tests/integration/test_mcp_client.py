"""Other MCP servers' tools in the agent: `wyckoff mcp add/list/rm/test`, namespaced tools
that need approval, untrusted results, and a broken server skipped. The server is a real
MCP server (tests/mcp_notes_server.py, built with the same `mcp` package)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.conftest import add_scripted_model, cli, marked_data
from tests.model_servers import Reply

NOTES_SERVER = str(Path(__file__).parent.parent / "mcp_notes_server.py")
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
