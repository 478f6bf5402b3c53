"""Recall of short stock names (茅台) and Latin tokens (MA200, ST): `memory search`, per-turn
recall through `ask`, no false hits on ordinary text, and memories of an older version
re-indexed."""

from __future__ import annotations

import json
import sqlite3

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply
from wyckoff.memory.codes import resolve_codes
from wyckoff.memory.recall import search
from wyckoff.memory.store import MemoryStore
from wyckoff.store import DB_FILE, MIGRATIONS

RULE = "贵州茅台跌破 MA200 就减半仓"
ORDINARY = (
    "今天天气不错，适合出去走走",
    "加工行业和创建行业指数的方法",  # 工行 and 建行 sit inside these words
    "一个完美的方案，使用友好",
    "test the best stop-loss in a post about stocks",
    "桌面上的文件 desk-research-2026.md 和 https://example.com/status",
    "科技板块和白酒板块都在反弹",
    "仓位 50% 以下，200 元以内",
)


def found(memories: MemoryStore, text: str) -> list[int]:
    return [h.memory.id for h in search(memories, text)]


def test_short_names_and_latin_tokens_find_the_rule(memories):
    rule = memories.insert("preference", RULE, codes=resolve_codes(RULE))
    st = memories.insert("decision", "ST 股一律不碰，*ST 更不看")
    for query in ("茅台", "茅台怎么办", "MA200", "ma200", "ＭＡ２００ 跌破了", "600519"):
        assert found(memories, query) == [rule], query
    assert found(memories, "ST") == [st] and found(memories, "st 股能买吗") == [st]
    assert found(memories, "招行跌破 MA200") == []  # another stock named: the scope holds


def test_ordinary_text_names_no_stock_and_recalls_nothing(memories):
    memories.insert("preference", RULE, codes=resolve_codes(RULE))
    memories.insert("decision", "ST 股一律不碰")
    for text in ORDINARY:
        assert resolve_codes(text) == [], text
        assert found(memories, text) == [], text


def test_per_turn_recall_through_ask_sees_the_short_name(openai_server):
    add_scripted_model(openai_server)
    assert cli("memory", "add", RULE).returncode == 0
    openai_server.script(Reply(text="好的。"), Reply(text="好的。"))
    assert cli("ask", "茅台怎么办").returncode == 0
    assert f"- [preference] {RULE}" in openai_server.bodies[0]["messages"][-1]["content"]
    assert cli("ask", "MA200 被跌破了").returncode == 0
    assert RULE in openai_server.bodies[1]["messages"][-1]["content"]


def test_memories_of_an_older_version_are_reindexed(home):
    home.mkdir()
    old = sqlite3.connect(home / DB_FILE, isolation_level=None)
    old.executescript(";\n".join(MIGRATIONS[:8]))  # as the version before Latin tokens left it
    old.execute("PRAGMA user_version = 8")
    old.execute(
        "INSERT INTO agent_memory (id, type, content, codes, provenance)"
        " VALUES (1, 'decision', '茅台跌破 MA200 就减半仓', '', 'user')"
    )
    old.execute(
        "INSERT INTO agent_memory_fts (rowid, content) VALUES (1, '茅台跌破 MA200 就减半仓')"
    )
    old.close()
    for query in ("茅台怎么办", "MA200"):
        result = cli("memory", "search", query, "--json")
        assert result.returncode == 0, result.stderr
        hits = json.loads(result.stdout)["hits"]
        assert [(h["id"], h["codes"]) for h in hits] == [(1, ["600519"])], query
    assert json.loads(cli("memory", "search", "科技", "--json").stdout)["hits"] == []
