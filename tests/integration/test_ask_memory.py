"""`wyckoff ask` and long-term memory: the extraction call at exit and the layer refresh
(playbooks, persona) with the TUI's gates, each its own line in `model usage`;
`--no-memory` and `memory.extract_after_ask` turn them off."""

from __future__ import annotations

import json

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply

QUESTION = "有后台任务吗？我一般尾盘二次确认再买"


def tool_turn(answer: str = "没有后台任务。") -> list[Reply]:
    return [Reply(tool_calls=[("check_background_tasks", {})]), Reply(text=answer)]


def usage_lines() -> dict[str, int]:
    """purpose -> calls, from `model usage --json`."""
    rows = json.loads(cli("model", "usage", "--json").stdout)["models"]
    return {r["purpose"]: r["calls"] for r in rows}


def listed_memories(memory_type: str | None = None) -> list[str]:
    args = ("--type", memory_type) if memory_type else ()
    listed = json.loads(cli("memory", "list", *args, "--json").stdout)["memories"]
    return [m["content"] for m in listed]


def test_extraction_after_ask_is_its_own_usage_line(openai_server):
    add_scripted_model(openai_server)
    openai_server.script(
        *tool_turn(), Reply(text="[偏好] 用户尾盘二次确认再买", usage=(50, 9, 0, 0))
    )
    assert cli("ask", QUESTION).returncode == 0
    assert len(openai_server.requests) == 3 and listed_memories() == ["用户尾盘二次确认再买"]
    assert usage_lines() == {"chat": 2, "extraction": 1}
    table = cli("model", "usage").stdout
    assert "对话" in table and "记忆提取" in table


def test_a_resumed_session_counts_its_conversation_not_the_memory_work(openai_server):
    from wyckoff.cli.agent import open_agent

    add_scripted_model(openai_server)
    openai_server.script(
        *tool_turn(), Reply(text="[偏好] 用户尾盘二次确认再买", usage=(50, 9, 0, 0))
    )
    assert cli("ask", QUESTION).returncode == 0
    assert usage_lines() == {"chat": 2, "extraction": 1}
    (session,) = json.loads(cli("session", "list", "--json").stdout)["sessions"]
    agent = open_agent(session_id=session["id"])
    try:  # the status bar's session usage: the two chat calls, as it counted them live
        assert agent.status().usage["input_tokens"] == 200
    finally:
        agent.close()


def test_no_memory_skips_recall_and_extraction(openai_server):
    add_scripted_model(openai_server)
    assert cli("memory", "add", "尾盘二次确认后再买").returncode == 0
    openai_server.script(*tool_turn())
    result = cli("ask", "--no-memory", QUESTION)
    assert result.returncode == 0, result.stderr
    assert len(openai_server.requests) == 2  # no extraction call
    assert "relevant-memories" not in json.dumps(openai_server.bodies[0], ensure_ascii=False)
    assert listed_memories() == ["尾盘二次确认后再买"] and usage_lines() == {"chat": 2}
    assert "不召回" in cli("ask", "--help").stdout


def test_the_config_setting_turns_extraction_off_but_keeps_recall(openai_server, home):
    add_scripted_model(openai_server)
    assert cli("memory", "add", "尾盘二次确认后再买").returncode == 0
    config = json.loads((home / "wyckoff.json").read_text())
    (home / "wyckoff.json").write_text(
        json.dumps({**config, "memory": {"extract_after_ask": False}})
    )
    openai_server.script(*tool_turn())
    assert cli("ask", QUESTION).returncode == 0
    assert len(openai_server.requests) == 2
    assert "尾盘二次确认后再买" in openai_server.bodies[0]["messages"][-1]["content"]
    assert cli("model", "list").returncode == 0  # the setting is a valid config


def test_ask_builds_playbooks_and_the_persona_with_the_tui_gates(openai_server):
    add_scripted_model(openai_server)
    for rule in ("跌破确认支撑不买", "极端放量冲高回落不买"):
        assert cli("memory", "add", "--type", "decision", rule).returncode == 0
    openai_server.script(
        *tool_turn(),
        Reply(text="[决策] 开盘半小时内不下单"),
        Reply(text="NEW"),  # the dedup's model stage: decisions exist already
        Reply(text="[画像] 用户重视本金安全\n[剧本] 尾盘二次确认买入：14:45 后检查支撑和量能"),
    )
    assert cli("ask", QUESTION).returncode == 0
    assert listed_memories("persona") == ["用户重视本金安全"]
    assert listed_memories("playbook") == ["尾盘二次确认买入：14:45 后检查支撑和量能"]
    assert usage_lines() == {"chat": 2, "extraction": 2, "layers": 1}
    # one new L1 since that refresh: below the gate's 3, so no layer call this time
    openai_server.script(*tool_turn("还是没有。"), Reply(text="[偏好] 用户不追涨"))
    assert cli("ask", "再看看后台任务，我不追涨").returncode == 0
    assert len(openai_server.requests) == 5 + 3
    assert usage_lines() == {"chat": 4, "extraction": 3, "layers": 1}
