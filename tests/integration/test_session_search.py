"""`wyckoff session search` and the TUI's /search: every session's typed and answered text,
Chinese and Latin words, newest first, snippets with session, local date and role, keys
masked; the index built for older messages and kept current as messages are written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import add_scripted_model, cli
from wyckoff.cli.chat_log import ChatLog
from wyckoff.store import DB_FILE, MIGRATIONS, Store

KEY = "Zq9wEirdkEy0123456789"  # no sk- shape: only the saved config knows it is a key


@pytest.fixture
def chat_log(home: Path) -> ChatLog:
    home.mkdir(parents=True, exist_ok=True)
    return ChatLog(Store.in_home(home))


def session(chat_log: ChatLog, *messages: tuple[str, str]) -> str:
    session_id = chat_log.create_session()
    for role, content in messages:
        chat_log.append(session_id, {"role": role, "content": content})  # type: ignore[misc, typeddict-item]
    return session_id


def hits(*query: str) -> list[dict]:
    result = cli("session", "search", *query, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hits"]


def test_chinese_and_latin_words_find_typed_and_answered_text_newest_first(chat_log):
    older = session(
        chat_log,
        ("user", "茅台跌破 MA200 怎么办？ST 股能碰吗"),
        ("assistant", "贵州茅台目前在派发阶段，A股整体偏弱。"),
    )
    chat_log.append(
        older, {"role": "tool", "tool_call_id": "c", "name": "t", "content": "白酒 tool"}
    )
    newer = session(chat_log, ("user", "白酒板块怎么看 test stop"), ("assistant", "白酒在修复。"))
    assert [(h["session_id"], h["role"]) for h in hits("白酒")] == [
        (newer, "assistant"),
        (newer, "user"),
    ]  # the tool result saying 白酒 is data, not searched
    assert [h["role"] for h in hits("茅台")] == ["assistant", "user"]
    for query in ("MA200", "ma200", "ST", "st", "派发阶段", "A股"):
        assert {h["session_id"] for h in hits(query)} == {older}, query
    assert [h["role"] for h in hits("茅台", "ST")] == ["user"]  # every word must occur
    assert hits("test") and hits("st", "白酒") == []  # "st" is a token, not a part of "test"
    hit = hits("派发阶段")[0]
    assert hit["title"] == "茅台跌破 MA200 怎么办？ST 股能碰吗" and "派发阶段" in hit["snippet"]
    table = cli("session", "search", "派发").stdout
    assert older in table and "助手" in table and hit["local_time"][:10] in table


def test_bad_queries_are_one_chinese_sentence_with_exit_2(chat_log):
    for query in ("茅", "  ", "茅台 a"):
        result = cli("session", "search", query)
        assert result.returncode == 2 and result.stderr.startswith("错误：")
        assert "Traceback" not in result.stderr
    assert "没有找到" in cli("session", "search", "不存在的话").stderr


def test_older_messages_are_indexed_and_a_key_in_them_is_masked(openai_server, home):
    added = cli("model", "add", "m", "--provider", "openai", "--model", "gpt-4.1",
                "--base-url", openai_server.base_url + "/v1", "--api-key", KEY)  # fmt: skip
    assert added.returncode == 0, added.stderr
    old = sqlite3.connect(home / DB_FILE, isolation_level=None)
    old.executescript(";\n".join(MIGRATIONS[:9]))  # before session search, keys saved raw
    old.execute("PRAGMA user_version = 9")
    old.execute("INSERT INTO sessions (id, title) VALUES ('s1', '旧会话')")
    old.execute(
        "INSERT INTO messages (session_id, seq, role, content) VALUES ('s1', 1, 'user', ?),"
        " ('s1', 2, 'assistant', '好的，已记下。')",
        (f"我的密钥是 {KEY}，白酒怎么看",),
    )
    old.execute("INSERT INTO sessions (id, title) VALUES ('s2', '很长的旧会话')")
    old.executemany(  # more than one batch of the backlog
        "INSERT INTO messages (session_id, seq, role, content) VALUES ('s2', ?, 'user', ?)",
        [(seq, f"第 {seq} 条笔记：半导体") for seq in range(1, 1202)],
    )
    old.close()
    found = hits("白酒")
    assert [(h["session_id"], h["title"]) for h in found] == [("s1", "旧会话")]
    assert len(hits("半导体", "--limit", "2000")) == 1201
    assert KEY not in json.dumps(found) and "***" in found[0]["snippet"]
    assert KEY not in cli("session", "search", "密钥").stdout


def test_the_index_follows_appends_compaction_and_forks(chat_log):
    first = session(chat_log, ("user", "宁德时代回踩 180 不破再建仓"), ("assistant", "好的。"))
    assert len(hits("宁德时代")) == 1
    chat_log.append(first, {"role": "user", "content": "比亚迪呢"})
    assert [h["session_id"] for h in hits("比亚迪")] == [first]
    chat_log.replace_messages(first, [{"role": "user", "content": "[对话摘要] 聊过新能源"}])
    assert hits("宁德时代") == [] and hits("比亚迪") == []
    chat_log.replace_messages(first, [{"role": "user", "content": "新能源车怎么看"}])
    fork = chat_log.fork(first)
    assert {h["session_id"] for h in hits("新能源车")} == {first, fork}


@pytest.mark.asyncio
async def test_tui_search_lists_sessions_and_resumes_the_chosen_one(openai_server, chat_log):
    from tests.tui.test_tui import submit, wait_until
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.screens import ResumeScreen
    from wyckoff.cli.tui.widgets import UserMessage

    add_scripted_model(openai_server)
    wanted = session(chat_log, ("user", "茅台跌破 MA200 怎么办"), ("assistant", "先减半仓。"))
    session(chat_log, ("user", "白酒怎么看"), ("assistant", "等企稳。"))
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "/search ma200")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        assert [s["id"] for s in app.screen.sessions] == [wanted]
        assert "用户：茅台跌破 MA200 怎么办" in app.screen.sessions[0]["title"]
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.query(UserMessage))
        assert app.agent.conversation.session_id == wanted
        assert str(app.query(UserMessage).first().render()) == "茅台跌破 MA200 怎么办"


@pytest.mark.asyncio
async def test_tui_search_says_what_it_found_not_what_resume_says(openai_server, chat_log):
    """The search results had the resume dialog's title; no match printed Python's 'quotes'."""
    from textual.widgets import Label

    from tests.tui.test_tui import submit, wait_until
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.screens import ResumeScreen

    add_scripted_model(openai_server)
    session(chat_log, ("user", "茅台跌破 MA200 怎么办"), ("assistant", "先减半仓。"))
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "/search 茅台")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        heading = str(app.screen.query_one(Label).render())
        assert "「茅台」" in heading and "1 个" in heading, heading
        await pilot.press("escape")
        await submit(pilot, "/search 宁德时代")
        await wait_until(pilot, lambda: "宁德时代" in app.export_screenshot())
        assert "「宁德时代」" in app.export_screenshot()
