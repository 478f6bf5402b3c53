"""Context compaction and the archive, offline token estimation."""

from __future__ import annotations

import copy
import json

import pytest

from tests.conftest import model_config
from tests.model_servers import Reply, check_tool_pairing
from wyckoff.archive_store import restore_context_archive, search_archives
from wyckoff.cli.compaction import (
    ACK,
    compact,
    find_tail_start,
    needs_compaction,
    reserve_tokens,
    shrink_tool_result,
    tail_budget,
    threshold,
)
from wyckoff.cli.providers.claude import to_claude_messages
from wyckoff.cli.tokens import count_messages, count_text, encoding, heuristic_count
from wyckoff.usage_store import usage_summary

SUMMARY = "用户在研究半导体板块，关注 688981 中芯国际，要求严格止损；已诊断 40 只股票，多数处于吸筹 B 段，中芯国际健康度为注意。"


def research_conversation(turns: int = 76) -> list[dict]:
    """A synthetic research session: 4 messages per turn (302 for 76 turns)."""
    messages = [
        {
            "role": "user",
            "content": "先看 688981 中芯国际，我的研究笔记在 notes/semis/2026-q4.md，止损要严格。",
        }
    ]
    messages.append({"role": "assistant", "content": "好的，我来诊断。"})
    for turn in range(turns - 1):
        code = f"{600000 + turn:06d}"
        result = {
            "source": "demo",
            "as_of": "2026-12-02",
            "code": code,
            "name": f"股票{turn}",
            "close": 10 + turn,
            "health": "caution",
            "reasons": ["60 日振幅过大"] * 20,
            "triggers": ["LPS"],
            "bars": [{"close": 10 + i} for i in range(40)],
        }
        messages.append({"role": "user", "content": f"再看看 {code} 怎么样？"})
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"call_{turn}", "name": "analyze_stock", "args": {"code": code}}
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{turn}",
                "name": "analyze_stock",
                "content": json.dumps(result, ensure_ascii=False),
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"{code} 健康度为注意，收盘 {10 + turn}，出现 LPS 信号，建议观察。" * 3,
            }
        )
    return messages


def test_threshold_table_holds():
    assert [reserve_tokens(w) for w in (64_000, 128_000, 200_000, 1_000_000)] == [
        16384,
        32000,
        32768,
        32768,
    ]
    assert [threshold(w) for w in (64_000, 128_000, 200_000, 1_000_000)] == [
        47_616,
        96_000,
        167_232,
        967_232,
    ]


def test_a_300_message_conversation_compacts_below_the_threshold(home):
    messages = research_conversation()
    assert len(messages) >= 300
    window = 64_000
    assert needs_compaction(messages, window)
    original = copy.deepcopy(messages)
    result = compact(
        messages, window=window, summarize=lambda text: SUMMARY, home=home, session_id="s1"
    )
    assert result is not None and messages == original  # the input is never modified
    compacted = result.messages
    assert count_messages(compacted) < threshold(window)
    opening = compacted[0]["content"]
    assert (
        opening.startswith("[对话摘要]")
        and "[动态保留片段]" in opening
        and "[可恢复归档]" in opening
    )
    assert "688981" in opening and "notes/semis/2026-q4.md" in opening  # early anchors survive
    assert result.archive_ref in opening
    # The tail is untouched and, with the summary, passes Anthropic's pairing rule.
    assert check_tool_pairing(to_claude_messages(compacted)) is None
    assert restore_context_archive(home, result.archive_ref) + kept_tail(compacted) == original


def kept_tail(compacted: list[dict]) -> list[dict]:
    """The messages after the summary (and its acknowledgement, when there is one)."""
    skip = 2 if compacted[1]["content"] == ACK else 1
    return compacted[skip:]


def test_the_archive_restores_exactly_what_was_removed_and_is_searchable(home):
    messages = research_conversation(40)
    result = compact(
        messages, window=16_000, summarize=lambda text: SUMMARY, home=home, session_id="s2"
    )
    assert (
        restore_context_archive(home, result.archive_ref) + kept_tail(result.messages) == messages
    )
    hits = search_archives(home, "688981")
    assert hits and hits[0]["ref"] == result.archive_ref
    assert search_archives(home, "000000") == []


def test_tail_never_starts_on_a_tool_result_and_keeps_its_calls():
    messages = research_conversation(30)
    for budget in (50, 300, 900, 2500, 6000):
        start = find_tail_start(messages, budget)
        assert messages[start]["role"] != "tool"
        ids = {c["id"] for m in messages[start:] for c in m.get("tool_calls") or []}
        assert all(m["tool_call_id"] in ids for m in messages[start:] if m["role"] == "tool")
        assert len(messages) - start >= 4


@pytest.mark.parametrize("summary", ["", "太短", None])
def test_a_failing_or_short_summary_leaves_history_untouched(home, summary):
    def summarize(text: str) -> str:
        if summary is None:
            raise RuntimeError("model down")
        return summary

    messages = research_conversation(40)
    original = copy.deepcopy(messages)
    assert compact(messages, window=16_000, summarize=summarize, home=home, session_id="s3") is None
    assert messages == original and not (home / "context_archive").exists()


def test_large_tool_results_shrink_to_a_structured_summary():
    content = json.dumps(
        {
            "source": "demo",
            "code": "600519",
            "name": "贵州茅台",
            "close": 1688.5,
            "health": "danger",
            "reasons": ["跌破止损"] * 80,
            "triggers": [],
        },
        ensure_ascii=False,
    )
    shrunk = shrink_tool_result(content)
    assert 400 <= len(shrunk) <= 600
    assert "600519" in shrunk and "1688.5" in shrunk and "danger" in shrunk


def test_cl100k_is_loaded_offline_and_the_heuristic_is_close():
    assert encoding() is not None  # the shipped file matched its sha256
    text = (
        "贵州茅台（600519）今天放量突破，MA50 上穿 MA200，RPS120 达到 92。The breakout came on 3x volume. "
        * 50
    )
    exact, guess = count_text(text), heuristic_count(text)
    assert abs(guess - exact) / exact < 0.25


def run_over_saved_history(server, home, messages: list[dict], window: int, registry):
    """Save `messages` as a session and run one turn over it with a `window`-token model;
    returns the turn's events and the conversation."""
    from wyckoff.cli.chat_log import ChatLog, Conversation
    from wyckoff.cli.providers.factory import make_provider
    from wyckoff.cli.runtime import AgentRuntime
    from wyckoff.store import Store

    home.mkdir(parents=True, exist_ok=True)
    store = Store.in_home(home)
    conversation = Conversation.start(ChatLog(store))
    for message in messages:
        conversation.append(message)
    provider = make_provider(model_config(server, context_window=window), stream_timeout_s=5)
    runtime = AgentRuntime(provider, registry, home=home, store=store)
    return list(runtime.run_stream(conversation)), conversation


def test_runtime_compacts_before_a_model_call_and_the_request_passes_pairing(
    anthropic_server, home
):
    from wyckoff.cli.builtin_tools import default_registry

    anthropic_server.script(Reply(text=SUMMARY), Reply(text="今天研究了 60 只股票。"))
    history = [*research_conversation(60), {"role": "user", "content": "总结一下今天的研究"}]
    events, conversation = run_over_saved_history(
        anthropic_server, home, history, 24_000, default_registry()
    )
    (event,) = [e for e in events if e["type"] == "compaction"]
    assert event["before"] > event["after"] and event["archive_ref"].startswith("archive://")
    assert events[-1]["status"] == "completed", events[-1]
    main_request = anthropic_server.bodies[1]
    assert check_tool_pairing(main_request["messages"]) is None
    assert "[对话摘要]" in json.dumps(main_request["messages"][0], ensure_ascii=False)
    # The chat log mirrors the compacted history; the originals are in the archive.
    saved = conversation.chat_log.load(conversation.session_id)
    assert saved[0]["content"].startswith("[对话摘要]")
    trace = next((home / "scratchpad").glob("*.jsonl")).read_text(encoding="utf-8")
    assert '"type": "compaction"' in trace
    # the summary call is counted apart from the conversation in `model usage`
    recorded = usage_summary(conversation.chat_log.store, 1)
    assert {r["purpose"]: r["calls"] for r in recorded} == {
        "compaction": 1,
        "chat": 1,
    }


def test_a_code_at_the_end_of_a_long_first_message_survives_as_an_anchor(home):
    messages = research_conversation(60)
    messages[0] = {
        "role": "user",
        "content": "这是我这周的复盘笔记：" + "大盘缩量震荡，板块轮动很快。" * 290 + "最后，重点盯 300750，止损设在 180。",
    }  # fmt: skip
    assert len(messages[0]["content"]) > 4_000
    result = compact(
        messages, window=20_000, summarize=lambda t: SUMMARY, home=home, session_id="s5"
    )
    anchors = result.messages[0]["content"].split("[动态保留片段]")[1].split("[可恢复归档]")[0]
    first = next(line for line in anchors.splitlines() if "复盘笔记" in line)
    assert "300750" in first and "止损设在 180" in first and len(first) <= 260  # fmt: skip


def test_a_resumed_session_compacted_again_keeps_the_earlier_archive_ref(home):
    from wyckoff.cli.chat_log import ChatLog, Conversation
    from wyckoff.store import Store

    home.mkdir(parents=True, exist_ok=True)
    chat_log = ChatLog(Store.in_home(home))
    conversation = Conversation.start(chat_log)
    for message in research_conversation(40):
        conversation.append(message)
    first = compact(
        conversation, window=16_000, summarize=lambda t: SUMMARY, home=home, session_id="s7"
    )
    conversation.replace_all(first.messages)
    more = research_conversation(40)[2:]
    for message in more:  # fresh call ids for the new turns
        for call in message.get("tool_calls") or []:
            call["id"] += "_resumed"
        if message.get("tool_call_id"):
            message["tool_call_id"] += "_resumed"
    resumed = chat_log.load(conversation.session_id) + more  # as `ask --continue` reads it
    second = compact(
        resumed, window=16_000, summarize=lambda t: SUMMARY, home=home, session_id="s7"
    )
    opening = second.messages[0]["content"]
    assert first.archive_ref in opening and second.archive_ref in opening
    assert opening.count("[对话摘要]") == 1


def test_three_successive_compactions_keep_earlier_anchors_and_every_archive_ref(home):
    messages = research_conversation(40)
    refs = []
    for round_number in range(3):
        result = compact(
            messages, window=16_000, summarize=lambda t: SUMMARY, home=home, session_id="s6"
        )
        refs.append(result.archive_ref)
        more = research_conversation(40)[2:]
        for message in more:  # fresh call ids for the new turns
            for call in message.get("tool_calls") or []:
                call["id"] += f"_r{round_number}"
            if message.get("tool_call_id"):
                message["tool_call_id"] += f"_r{round_number}"
        messages = result.messages + more
    opening = result.messages[0]["content"]
    assert all(ref in opening for ref in refs)
    assert "688981" in opening and "notes/semis/2026-q4.md" in opening  # the first session's anchor
    assert opening.count("[对话摘要]") == 1 and opening.count("[动态保留片段]") == 1
    metadata = json.loads(
        (home / "context_archive" / "s6" / (refs[2].rsplit("/", 1)[1] + ".json")).read_text()
    )
    assert metadata["earlier_refs"] == refs[:2]  # fmt: skip


def first_turn_with_large_tool_results() -> list[dict]:
    """A first turn whose batch of tool results alone fills a 12K window's tail budget, then
    the answer and the next question."""
    bars = [
        {"date": f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}", "close": 10 + d} for d in range(400)
    ]
    big = {"source": "demo", "code": "600519", "name": "贵州茅台", "bars": bars}
    return [
        {"role": "user", "content": "诊断 600519 和 000858，对比一下。"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_a", "name": "analyze_stock", "args": {"code": "600519"}},
                {"id": "call_b", "name": "analyze_stock", "args": {"code": "000858"}},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "name": "analyze_stock",
            "content": json.dumps(big, ensure_ascii=False),
        },
        {
            "role": "tool",
            "tool_call_id": "call_b",
            "name": "analyze_stock",
            "content": json.dumps({**big, "code": "000858", "bars": bars[:10]}),
        },
        {"role": "assistant", "content": "600519 健康度良好；000858 处于吸筹 B 段。"},
        {"role": "user", "content": "那 000858 什么时候可以建仓？"},
    ]


def test_a_cut_inside_the_first_turns_tool_results_moves_past_them():
    messages = first_turn_with_large_tool_results()
    start = find_tail_start(messages, tail_budget(12_000))
    assert start == 4  # after both results (back to the call would leave nothing to compact)
    compacted = [{"role": "user", "content": "[对话摘要]"}, *messages[start:]]
    assert check_tool_pairing(to_claude_messages(compacted)) is None


def test_a_12k_window_compacts_a_first_turn_of_large_tool_results(anthropic_server, home):
    from wyckoff.cli.tools import ToolRegistry

    anthropic_server.script(Reply(text=SUMMARY), Reply(text="等待 LPS 确认后再建仓。"))
    events, _ = run_over_saved_history(
        anthropic_server, home, first_turn_with_large_tool_results(), 12_000, ToolRegistry()
    )
    (event,) = [e for e in events if e["type"] == "compaction"]
    assert (event["before"], event["after"]) == (6, 3)  # summary, the answer, the question
    assert events[-1]["status"] == "completed" and events[-1]["text"] == "等待 LPS 确认后再建仓。"
    request = anthropic_server.bodies[1]["messages"]
    assert check_tool_pairing(request) is None and "[对话摘要]" in json.dumps(
        request[0], ensure_ascii=False
    )
    assert [m["role"] for m in request] == ["user", "assistant", "user"]
