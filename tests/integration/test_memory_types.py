"""The staged memory types of the design: stock_opinion, market_view and fact — extracted from
a conversation by their tags, listed by type, recalled dated in a section of their own with a
14-day half-life, pruned after 30/45 days; old types keep working."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply
from wyckoff.memory.recall import build_memory_context, search
from wyckoff.memory.store import utc_now

OPINION = "用户认为贵州茅台仍在派发阶段，站回 MA200 之前不加仓"
VIEW = "用户认为白酒长期下跌后有修复机会，等放量企稳再看"
FACT = "用户上班时间不能看盘，只在收盘后下单"


def listed(memory_type: str) -> list[dict]:
    result = cli("memory", "list", "--type", memory_type, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["memories"]


def test_extraction_writes_each_staged_type_from_its_tag(openai_server):
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("check_background_tasks", {})]),
        Reply(text="贵州茅台目前仍在派发阶段。"),
        Reply(text=f"[个股观点] {OPINION}\n[市场观点] {VIEW}\n[事实] {FACT}"),
    )
    result = cli("ask", "茅台还在派发吗？我上班不能看盘，白酒我觉得迟早修复")
    assert result.returncode == 0, result.stderr
    assert [(m["content"], m["codes"]) for m in listed("stock_opinion")] == [(OPINION, ["600519"])]
    assert [m["content"] for m in listed("market_view")] == [VIEW]
    assert [m["content"] for m in listed("fact")] == [FACT]
    prompt = json.dumps(openai_server.bodies[2], ensure_ascii=False)
    assert "[个股观点]" in prompt and "[市场观点]" in prompt and "[事实]" in prompt
    assert listed("preference") == []  # an old type still lists (empty here)


def test_a_stock_opinion_must_name_a_stock():
    refused = cli("memory", "add", "--type", "stock_opinion", "这只股票还在派发")
    assert refused.returncode == 2 and "个股观点要写出股票名称或 6 位代码" in refused.stderr
    assert listed("stock_opinion") == []
    added = cli("memory", "add", "--type", "stock_opinion", "茅台还在派发")
    assert added.returncode == 0, added.stderr
    assert listed("stock_opinion")[0]["codes"] == ["600519"]
    assert "stock_opinion（个股观点）" in cli("memory", "list", "--help").stdout


def test_views_are_recalled_dated_in_their_own_section_and_decay(memories):
    opinion = memories.insert(
        "stock_opinion", OPINION, codes=["600519"], created_at=utc_now() - timedelta(days=28)
    )
    memories.insert("fact", FACT)
    memories.insert("preference", "单票仓位不超过 15%")
    score = {h.memory.id: h.score for h in search(memories, "茅台怎么看")}[opinion]
    assert score == pytest.approx(1.2 * 0.25, rel=0.01)  # two 14-day half-lives
    block = build_memory_context(memories, "茅台怎么看，上班时间能看盘吗")
    titles = [line for line in block.splitlines() if line.startswith("# ")]
    assert titles == [
        "# 用户画像",
        "# 阶段观点（当时的看法，注意日期；以最新数据为准）",
        "# 历史记忆",
    ]
    day = memories.get(opinion).created_at[:10]
    assert f"- [stock_opinion {day}] {OPINION}" in block
    assert f"] {FACT}" in block.split("# 历史记忆")[1]


def test_staged_types_are_pruned_by_age(memories):
    days_ago = lambda days: utc_now() - timedelta(days=days)  # noqa: E731
    memories.insert("market_view", "31 天前的市场观点", created_at=days_ago(31))
    memories.insert("fact", "44 天前的事实", created_at=days_ago(44))
    memories.insert("fact", "46 天前的事实", created_at=days_ago(46))
    memories.insert("market_view", "新的市场观点")
    memories.insert("fact", "新的事实")
    assert [m.content for m in memories.list_memories("market_view")] == ["新的市场观点"]
    assert [m.content for m in memories.list_memories("fact")] == ["新的事实", "44 天前的事实"]


@pytest.mark.asyncio
async def test_tui_memory_view_shows_a_view_with_its_day(openai_server):
    from tests.tui.test_tui import submit
    from wyckoff.cli.tui.app import create_app

    add_scripted_model(openai_server)
    assert cli("memory", "add", "--type", "stock_opinion", OPINION).returncode == 0
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "/memory 茅台")
        await pilot.pause(0.2)
        shown = app.query(".help").last().source
        day = app.agent.memories.list_memories()[0].created_at[:10]
        assert f"`个股观点 {day}` {OPINION}" in shown
