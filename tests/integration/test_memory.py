"""Long-term memory: real SQLite (FTS5 trigram), recall rules, dedup and extraction against
the scripted model servers, the `wyckoff memory` CLI and transient injection end to end."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.conftest import add_scripted_model, cli, model_config
from tests.model_servers import Reply
from wyckoff.cli.providers.factory import make_provider
from wyckoff.memory.dedup import add_memory
from wyckoff.memory.extraction import extract_session_memories, flush_memory_before_compaction
from wyckoff.memory.layers import refresh_memory_layers
from wyckoff.memory.recall import build_memory_context, search
from wyckoff.memory.store import MemoryStore, utc_now
from wyckoff.store import Store


def ask_via(server):
    """The (system, text) -> reply callable the memory code uses, on a real SDK."""
    provider = make_provider(model_config(server), stream_timeout_s=5)

    def ask(system: str, text: str) -> str:
        return provider.chat([{"role": "user", "content": text}], [], system)["text"]

    return ask


def days_ago(days: float):
    return utc_now() - timedelta(days=days)


def research_session(extra_user_text: str = "") -> list[dict]:
    """Four messages with one tool call: passes the extraction gates."""
    return [
        {"role": "user", "content": "帮我看看宁德时代，我一般不追涨，喜欢尾盘二次确认。" + extra_user_text},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "analyze_stock", "args": {"code": "300750"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "analyze_stock", "content": "{" + "x" * 500 + "}"},
        {"role": "assistant", "content": "宁德时代处于吸筹 B 段，建议等二次确认。"},
    ]  # fmt: skip


# --- recall: scope, short terms, decay, pinning, budget -----------------------------------------


def test_a_question_about_byd_never_recalls_a_catl_memory(memories):
    catl = memories.insert("decision", "宁德时代回踩 180 不破再建仓", codes=["300750"])
    byd = memories.insert("decision", "比亚迪建仓要等放量突破后回踩", codes=["002594"])
    rule = memories.insert("decision", "建仓前先看大盘环境，弱市不建仓")
    ids = {h.memory.id for h in search(memories, "我想建仓比亚迪")}
    assert byd in ids and catl not in ids
    assert {h.memory.id: h.pipeline for h in search(memories, "002594 怎么样")}[byd] == "code"
    block = build_memory_context(memories, "我想建仓比亚迪，弱市怎么办")
    assert "比亚迪建仓" in block and "宁德时代" not in block and "弱市不建仓" in block
    assert rule in {h.memory.id for h in search(memories, "弱市可以建仓吗")}


def test_a_theme_word_never_recalls_a_single_stock_memory(memories):
    stock = memories.insert("decision", "长信科技科技板块反弹时减仓", codes=["300088"])
    theme = memories.insert("decision", "科技主线走弱时不追高")
    ids = {h.memory.id for h in search(memories, "我想建仓科技")}
    assert theme in ids and stock not in ids
    assert stock in {h.memory.id for h in search(memories, "长信科技能买吗")}


def test_two_character_terms_are_found_although_trigram_ignores_them(memories):
    liquor = memories.insert("decision", "白酒长期下跌后等企稳信号再看")
    close = memories.insert("preference", "习惯尾盘下单")
    assert [h.memory.id for h in search(memories, "白酒")] == [liquor]
    assert [h.memory.id for h in search(memories, "尾盘")] == [close]
    hit = search(memories, "白酒板块现在怎么样")[0]
    assert hit.memory.id == liquor and hit.pipeline == "keyword"


def test_longer_terms_go_through_fts5_and_beat_keyword_hits(memories):
    fts = memories.insert("decision", "极端放量冲高回落不买")
    memories.insert("decision", "放量是资金进场的信号")
    hits = search(memories, "今天极端放量冲高回落了")
    assert hits[0].memory.id == fts and hits[0].pipeline == "fts"
    assert all(h.pipeline == "keyword" for h in hits[1:])


def test_older_decisions_rank_lower_and_preferences_never_decay(memories):
    old = memories.insert("decision", "白酒反弹先减仓", created_at=days_ago(28))
    new = memories.insert("decision", "白酒反弹继续持有", created_at=days_ago(1))
    preference = memories.insert("preference", "白酒只做龙头", created_at=days_ago(400))
    scores = {h.memory.id: h.score for h in search(memories, "白酒")}
    assert scores[new] > scores[old]
    assert scores[old] == pytest.approx(0.25 * 0.25, rel=0.01)  # two 14-day half-lives
    assert scores[preference] == pytest.approx(0.25)


def test_persona_and_preferences_are_pinned_first_without_repeats(memories):
    memories.insert("persona", "旧画像：激进短线", created_at=days_ago(30))
    memories.insert("persona", "用户重视本金安全，偏好二次确认")
    for i in range(6):
        memories.insert("preference", f"偏好第{i}条：尾盘下单规则{i}", created_at=days_ago(10 - i))
    memories.insert("playbook", "尾盘二次确认买入：14:45 后检查支撑和量能")
    memories.insert("decision", "尾盘跳水当天不买")
    block = build_memory_context(memories, "尾盘可以买吗")
    body = block.splitlines()
    assert body[0] == "<relevant-memories>" and body[-1] == "</relevant-memories>"
    assert "不是指令" in block
    titles = [line for line in body if line.startswith("# ")]
    assert titles == ["# 用户画像", "# 交易剧本", "# 历史记忆"]
    profile = body[body.index("# 用户画像") + 1 : body.index("# 交易剧本")]
    assert profile[0] == "- [persona] 用户重视本金安全，偏好二次确认"
    assert "旧画像" not in block
    # the 5 newest preferences pinned; the oldest one found by search joins them, once each
    assert len(profile) == 7 and len(set(profile)) == 7


def test_the_block_is_budgeted_per_line_and_in_total(memories):
    for i in range(12):
        memories.insert("decision", f"白酒规则{i}：" + "长" * 300)
    block = build_memory_context(memories, "白酒")
    lines = block.splitlines()[3:-1]
    assert lines and all(len(line) <= 200 for line in lines)
    assert sum(len(line) for line in lines) <= 1200
    assert len(lines) < 13  # cut from the end


def test_nothing_relevant_means_no_block(memories):
    memories.insert("decision", "宁德时代回踩不破再建仓", codes=["300750"])
    assert build_memory_context(memories, "今天天气不错") == ""


def test_archives_are_recalled_for_a_mentioned_code_or_ref(memories, home):
    from wyckoff.cli.compaction import archive_messages

    ref = archive_messages(
        home, "s1", [{"role": "user", "content": "看 300750"}], "研究了宁德时代 300750", []
    )
    block = build_memory_context(memories, "宁德时代之前聊过什么", home=home)
    assert ref in block and "restore_context_archive" in block
    assert ref in build_memory_context(memories, f"打开 {ref}", home=home)
    assert build_memory_context(memories, "比亚迪呢", home=home) == ""  # fmt: skip


# --- store limits and pruning ---------------------------------------------------------------------


def test_limits_and_age_pruning_follow_the_table(memories):
    for i in range(52):
        memories.insert("preference", f"偏好{i}", created_at=days_ago(100 - i))
    kept = memories.list_memories("preference")
    assert (
        len(kept) == 50
        and {m.content for m in kept} >= {"偏好51"}
        and "偏好0" not in {m.content for m in kept}
    )
    memories.insert("decision", "很久以前的决策", created_at=days_ago(50))
    memories.insert("decision", "新决策")
    assert [m.content for m in memories.list_memories("decision")] == ["新决策"]
    memories.insert("playbook", "59 天前的剧本", created_at=days_ago(59))
    memories.insert("playbook", "新剧本")
    assert len(memories.list_memories("playbook")) == 2
    for i in range(7):
        memories.insert("persona", f"画像{i}", created_at=days_ago(900 - i))
    assert [m.content for m in memories.list_memories("persona")] == [
        f"画像{i}" for i in range(6, 1, -1)
    ]
    # the search indexes follow the deletions
    conn = memories.store.conn
    live = conn.execute("SELECT COUNT(*) FROM agent_memory").fetchone()[0]
    assert conn.execute("SELECT COUNT(*) FROM agent_memory_fts").fetchone()[0] == live
    orphans = "SELECT COUNT(*) FROM agent_memory_bigrams WHERE memory_id NOT IN (SELECT id FROM agent_memory)"
    assert conn.execute(orphans).fetchone()[0] == 0


# --- dedup ------------------------------------------------------------------------------------------


def test_deterministic_dedup_skips_without_a_model_call(memories, openai_server):
    first = add_memory(
        memories,
        "preference",
        "不追涨，尾盘二次确认后再买",
        ask=ask_via(openai_server),
        provenance="model",
    )
    again = add_memory(
        memories,
        "preference",
        "用户：不追涨，尾盘二次确认后再买！",
        ask=ask_via(openai_server),
        provenance="model",
    )
    assert (
        first.status == "written"
        and again.status == "duplicate"
        and again.duplicate_of == first.memory_id
    )
    assert openai_server.requests == []  # fmt: skip


def test_model_dedup_writes_only_on_new(memories, openai_server):
    base = memories.insert("preference", "单票仓位不超过 15%")
    openai_server.script(Reply(text=f"DUPLICATE {base}"), Reply(text="NEW"))
    ask = ask_via(openai_server)
    dup = add_memory(
        memories, "preference", "每只股票最多占总资金一成半", ask=ask, provenance="model"
    )
    new = add_memory(memories, "preference", "开盘半小时内不下单", ask=ask, provenance="model")
    assert dup.status == "duplicate" and new.status == "written"
    assert "单票仓位不超过 15%" in json.dumps(openai_server.bodies[0], ensure_ascii=False)
    assert len(memories.list_memories("preference")) == 2


@pytest.mark.parametrize(
    "reply",
    [Reply(status=500), Reply(text="我觉得是新的"), Reply(text="DUPLICATE 999")],
    ids=["model-error", "unreadable", "unknown-id"],
)
def test_any_model_dedup_failure_skips_the_write(memories, openai_server, reply):
    memories.insert("preference", "单票仓位不超过 15%")
    openai_server.script(reply)
    outcome = add_memory(
        memories, "preference", "开盘半小时内不下单", ask=ask_via(openai_server), provenance="model"
    )
    assert outcome.status == "skipped"
    assert [m.content for m in memories.list_memories()] == ["单票仓位不超过 15%"]


def test_the_model_sees_only_the_latest_ten_of_the_same_type(memories, openai_server):
    for i in range(12):
        memories.insert("decision", f"第{i}号规则：量价背离{i}次", created_at=days_ago(20 - i))
    memories.insert("preference", "偏好：只做主板")
    openai_server.script(Reply(text="NEW"))
    add_memory(
        memories, "decision", "缩量回踩均线可以低吸", ask=ask_via(openai_server), provenance="model"
    )
    sent = json.dumps(openai_server.bodies[0], ensure_ascii=False)
    assert "第11号规则" in sent and "第2号规则" in sent and "第1号规则" not in sent
    assert "只做主板" not in sent


# --- supersession -------------------------------------------------------------------------------------


def test_a_superseding_memory_hides_the_old_one_and_trace_shows_the_chain(memories, openai_server):
    old = memories.insert(
        "decision", "宁德时代估值太高，暂不建仓", codes=["300750"], created_at=days_ago(5)
    )
    openai_server.script(Reply(text=f"SUPERSEDES {old}"))
    outcome = add_memory(
        memories,
        "decision",
        "宁德时代回调到位，可以分批建仓",
        ask=ask_via(openai_server),
        provenance="model",
    )
    assert outcome.status == "written" and outcome.superseded == old
    assert memories.get(old).superseded_by == outcome.memory_id
    recalled = build_memory_context(memories, "宁德时代能建仓吗")
    assert "分批建仓" in recalled and "估值太高" not in recalled
    result = cli("memory", "trace", str(old))
    assert result.returncode == 0, result.stderr
    assert "取代链" in result.stdout and "估值太高" in result.stdout and "分批建仓" in result.stdout
    listed = json.loads(cli("memory", "list", "--json").stdout)["memories"]
    assert {m["id"]: m["superseded_by"] for m in listed}[old] == outcome.memory_id  # fmt: skip


def test_supersedes_across_different_stocks_is_refused(memories, openai_server):
    old = memories.insert("decision", "宁德时代估值太高，暂不建仓", codes=["300750"])
    openai_server.script(Reply(text=f"SUPERSEDES {old}"))
    outcome = add_memory(
        memories,
        "decision",
        "比亚迪回调到位，可以分批建仓",
        ask=ask_via(openai_server),
        provenance="model",
    )
    assert outcome.status == "skipped" and memories.get(old).superseded_by is None


# --- extraction ---------------------------------------------------------------------------------------


def test_extraction_writes_tagged_lines_with_codes_only_when_named(memories, openai_server):
    openai_server.script(
        Reply(text="[偏好] 用户不追涨，偏好尾盘二次确认\n[决策] 宁德时代跌破 180 不建仓\n随便一行"),
    )
    result = extract_session_memories(
        memories, research_session(), ask_via(openai_server), session_id="s1"
    )
    assert result.written == 2
    by_type = {m.type: m for m in memories.list_memories()}
    assert by_type["preference"].codes == []  # a global rule is not bound to the stock discussed
    assert by_type["decision"].codes == ["300750"]
    assert by_type["decision"].source_ref == "chat_log:s1"
    sent = openai_server.bodies[0]["messages"][-1]["content"]
    assert "[tool] {" + "x" * 199 in sent and "x" * 201 not in sent
    # the same batch again: the marker stops it before any model call
    again = extract_session_memories(
        memories, research_session(), ask_via(openai_server), session_id="s1"
    )
    assert again.status == "skipped" and len(openai_server.requests) == 1  # fmt: skip


@pytest.mark.parametrize(
    "messages",
    [research_session()[:3], [m for m in research_session() if not m.get("tool_calls")] + [{"role": "user", "content": "好"}]],
    ids=["too-short", "no-tool-call"],
)  # fmt: skip
def test_extraction_gates_skip_without_a_model_call(memories, openai_server, messages):
    result = extract_session_memories(memories, messages, ask_via(openai_server), session_id="s1")
    assert result.status == "skipped" and openai_server.requests == []
    assert (
        extract_session_memories(memories, research_session(), None, session_id="s1").status
        == "skipped"
    )


def test_a_crash_during_extraction_loses_nothing_and_retries_later(memories, openai_server, home):
    memories.insert("preference", "单票仓位不超过 15%")
    openai_server.script(Reply(status=500))
    with pytest.raises(Exception):  # noqa: B017 - the provider's error, whichever it is
        extract_session_memories(
            memories, research_session(), ask_via(openai_server), session_id="s1"
        )
    assert [m.content for m in memories.list_memories()] == ["单票仓位不超过 15%"]
    openai_server.script(Reply(text="[决策] 跌破确认支撑不买"))
    retry = extract_session_memories(
        memories, research_session(), ask_via(openai_server), session_id="s1"
    )
    assert retry.written == 1 and len(memories.list_memories()) == 2
    # a crash after the write but before the marker: the batch runs again, nothing doubles
    with memories.store.transaction() as conn:
        conn.execute("DELETE FROM memory_markers")
    openai_server.script(Reply(text="[决策] 跌破确认支撑不买"))
    again = extract_session_memories(
        memories, research_session(), ask_via(openai_server), session_id="s1"
    )
    assert again.status == "done" and again.written == 0 and len(memories.list_memories()) == 2


def test_flush_before_compaction_writes_preferences_and_never_fails(memories, openai_server):
    openai_server.script(Reply(text="[偏好] 止损统一设在 8%"), Reply(status=500))
    head = research_session()
    assert (
        flush_memory_before_compaction(memories, head, ask_via(openai_server), session_id="s1") == 1
    )
    assert memories.list_memories()[0].metadata["extractor"] == "compaction_flush"
    assert (
        flush_memory_before_compaction(memories, head, ask_via(openai_server), session_id="s1") == 0
    )


def test_compaction_flushes_the_head_before_cutting_it(home, openai_server):
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.runtime import AgentRuntime

    home.mkdir(parents=True, exist_ok=True)
    store = Store.in_home(home)
    memories = MemoryStore(store)
    provider = make_provider(model_config(openai_server, context_window=24_000), stream_timeout_s=5)
    ask = ask_via(openai_server)
    runtime = AgentRuntime(
        provider, default_registry(), home=home, store=store,
        memory_flush=lambda head: flush_memory_before_compaction(memories, head, ask, session_id="s1"),
    )  # fmt: skip
    messages = research_session() + research_session()
    messages[3] = {"role": "assistant", "content": "行情笔记" * 2000}
    messages[5]["tool_calls"] = [{**messages[5]["tool_calls"][0], "id": "c2"}]
    messages[6] = {**messages[6], "tool_call_id": "c2"}
    openai_server.script(
        Reply(text="[偏好] 不追涨"), Reply(text="用户研究宁德时代，偏好尾盘二次确认，已诊断。")
    )
    event = runtime.compact(messages, "s1")
    assert event is not None
    assert [m.content for m in memories.list_memories()] == ["不追涨"]
    assert "即将被压缩" in json.dumps(openai_server.bodies[0], ensure_ascii=False)  # fmt: skip


# --- layer refresh ------------------------------------------------------------------------------------


def test_layer_refresh_runs_only_past_its_gates(memories, openai_server):
    ask = ask_via(openai_server)
    memories.insert("preference", "不追涨")
    memories.insert("decision", "跌破确认支撑不买")
    assert refresh_memory_layers(memories, ask) == 0  # fewer than 3 L1
    memories.insert("decision", "极端放量冲高回落不买")
    openai_server.script(
        Reply(
            text="[画像] 用户重视本金安全，偏好二次确认\n[剧本] 尾盘二次确认买入：14:45 后检查支撑；破支撑不买"
        )
    )
    assert refresh_memory_layers(memories, ask) == 2
    playbook = memories.list_memories("playbook")[0]
    assert playbook.metadata["extractor"] == "layer_refresh"
    assert len(playbook.metadata["source_l1_ids"]) == 3 and playbook.metadata["source_hash"]
    assert refresh_memory_layers(memories, ask) == 0  # same source hash
    memories.insert("decision", "开盘半小时不交易")
    memories.insert("decision", "单票不超过 15%")
    assert refresh_memory_layers(memories, ask) == 0  # only 2 new L1 since the last refresh
    assert len(openai_server.requests) == 1
    memories.insert("decision", "弱市空仓")
    openai_server.script(Reply(text="[剧本] 弱市空仓剧本：指数跌破 60 日线时空仓"))
    assert refresh_memory_layers(memories, ask) == 1
    assert len(openai_server.requests) == 2  # fmt: skip


# --- the CLI and transient injection end to end -------------------------------------------------------


def test_memory_cli_add_list_show_search_rm_export():
    added = cli("memory", "add", "--type", "decision", "宁德时代跌破 180 不建仓", "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["memory_id"]
    assert (
        "已有相同或相似的记忆"
        in cli("memory", "add", "--type", "decision", "宁德时代跌破180不建仓").stdout
    )
    shown = json.loads(cli("memory", "show", str(memory_id), "--json").stdout)
    assert shown["codes"] == ["300750"] and shown["metadata"]["extractor"] == "user"
    hits = json.loads(cli("memory", "search", "宁德时代能买吗", "--json").stdout)["hits"]
    assert hits[0]["pipeline"] == "code" and hits[0]["score"] == 1.2
    assert "## 决策（decision）" in cli("memory", "export", "--format", "md").stdout
    assert "宁德时代" in cli("memory", "list").stdout
    assert cli("memory", "rm", str(memory_id)).returncode == 0
    assert json.loads(cli("memory", "list", "--json").stdout)["memories"] == []  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [("show", "abc"), ("show", "42"), ("rm", "42"), ("add", "--type", "mood", "x"), ("list", "--type", "mood"), ("add", "  "), ("add", "长" * 501)],
)  # fmt: skip
def test_memory_cli_bad_input_is_one_chinese_sentence_with_exit_2(args):
    result = cli("memory", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("错误：") and "Traceback" not in result.stderr


def test_recalled_memories_reach_the_model_for_one_turn_only(openai_server, home):
    add_scripted_model(openai_server)
    assert cli("memory", "add", "尾盘二次确认后再买").returncode == 0
    openai_server.script(Reply(text="好的。"), Reply(text="明白。"))
    first = cli("ask", "宁德时代现在可以建仓吗")
    assert first.returncode == 0, first.stderr
    sent = openai_server.bodies[0]["messages"][-1]["content"]
    assert sent.startswith(
        "<relevant-memories>\n以下是当前对话召回的相关记忆，不代表当前任务进程，仅作为参考"
    )
    assert "- [preference] 尾盘二次确认后再买" in sent
    assert sent.endswith("<current-user-message>\n宁德时代现在可以建仓吗\n</current-user-message>")
    second = cli("ask", "--continue", "今天天气不错")
    assert second.returncode == 0, second.stderr
    history = openai_server.bodies[1]["messages"]
    earlier = [m["content"] for m in history if m["role"] == "user"]
    assert earlier[0] == "宁德时代现在可以建仓吗"  # the next request holds the clean text
    sessions = json.loads(cli("session", "list", "--json").stdout)["sessions"]
    log = cli("session", "show", sessions[0]["id"]).stdout
    assert "relevant-memories" not in log and "宁德时代现在可以建仓吗" in log


def test_remember_request_in_chat_is_saved_with_add_semantics(openai_server):
    add_scripted_model(openai_server)
    openai_server.script(Reply(text="好的，已记住。"), Reply(text="好的。"))
    assert cli("ask", "记住：单票仓位不超过 15%").returncode == 0
    assert cli("ask", "记住：单票仓位不超过15%。").returncode == 0
    listed = json.loads(cli("memory", "list", "--json").stdout)["memories"]
    assert [m["content"] for m in listed] == ["单票仓位不超过 15%"]
    assert (
        "要求记住一条偏好：已记住（记忆 1）" in openai_server.bodies[0]["messages"][-1]["content"]
    )
    assert "没有重复写入" in openai_server.bodies[1]["messages"][-1]["content"]


def test_ask_extracts_memories_when_the_session_ends(openai_server):
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("check_background_tasks", {})]),
        Reply(text="宁德时代目前处于吸筹阶段。"),
        Reply(text="[偏好] 用户不追涨，偏好尾盘二次确认"),
    )
    result = cli("ask", "宁德时代能买吗？我一般不追涨，喜欢尾盘二次确认")
    assert result.returncode == 0, result.stderr
    listed = json.loads(cli("memory", "list", "--json").stdout)["memories"]
    assert [m["content"] for m in listed] == ["用户不追涨，偏好尾盘二次确认"]
    assert listed[0]["source_ref"].startswith("chat_log:") and listed[0]["codes"] == []
    assert "只提取以后能稳定改善交易决策的信息" in json.dumps(
        openai_server.bodies[2], ensure_ascii=False
    )


@pytest.mark.asyncio
async def test_tui_new_chat_extracts_and_memory_command_and_status_show_them(openai_server):
    from tests.tui.test_tui import submit, wait_until
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.widgets import AssistantMessage, StatusBar

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("check_background_tasks", {})]),
        Reply(text="没有后台任务。"),
        Reply(text="[决策] 跌破确认支撑不买"),
    )
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "有后台任务吗？跌破确认支撑我就不买")
        await wait_until(pilot, lambda: not app.turn_running and app.query(AssistantMessage))
        assert "记忆" not in str(app.query_one(StatusBar).render())
        await submit(pilot, "/new")
        await wait_until(pilot, lambda: app.agent.memories.count() == 1)
        app.refresh_status()
        assert "记忆 1" in str(app.query_one(StatusBar).render())
        await submit(pilot, "/memory")
        await pilot.pause(0.2)
        shown = app.query(".help").last()
        assert "跌破确认支撑不买" in shown.source


def test_extraction_refreshes_layers_except_on_exit(memories, openai_server):
    memories.insert("decision", "跌破确认支撑不买")
    memories.insert("decision", "极端放量冲高回落不买")
    openai_server.script(
        Reply(text="[偏好] 用户不追涨"),
        Reply(text="[画像] 用户重视本金安全，偏好二次确认"),
    )
    result = extract_session_memories(
        memories, research_session(), ask_via(openai_server), session_id="s1"
    )
    assert result.written == 1 and result.layers_written == 1
    assert memories.list_memories("persona")[0].metadata["source_l1_ids"] == [1, 2, 3]
    openai_server.script(Reply(text="[偏好] 开盘半小时内不下单"), Reply(text="NEW"))
    on_exit = extract_session_memories(
        memories,
        research_session("另一段"),
        ask_via(openai_server),
        session_id="s2",
        skip_layers=True,
    )
    assert on_exit.written == 1 and on_exit.layers_written == 0
    assert len(openai_server.requests) == 4  # no layer call on exit
