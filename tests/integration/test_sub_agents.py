"""Sub-agents end to end: the main model delegates, the sub-agent calls tools and answers,
both through the real SDK against one scripted server (each sub-agent routed by its task)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.conftest import cli, marked_data, model_config
from tests.model_servers import Reply
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.runtime import AgentRuntime, Approval
from wyckoff.cli.sub_agents import (
    SUB_AGENTS,
    TRIMMED_MARK,
    SubAgentPolicy,
    SubAgents,
    cut_result,
    trim_context,
)
from wyckoff.cli.tools import ToolRegistry, ToolSpec
from wyckoff.cli.traces import read_trace_file
from wyckoff.store import Store
from wyckoff.usage_store import usage_summary


class CodeParams(BaseModel):
    code: str


class Spans:
    """Test tools that record when they ran and whether they ran at all."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()

    def tool(self, name: str, seconds: float = 0.0, **fields) -> ToolSpec:
        def run(params: CodeParams, context) -> dict:
            start = time.monotonic()
            context.cancel_event.wait(seconds)
            with self.lock:
                self.spans.append((f"{name}:{params.code}", start, time.monotonic()))
            return {"code": params.code, "close": 10.5, "source": "test"}

        return ToolSpec(
            name=name,
            description=f"测试工具 {name}",
            params=CodeParams,
            func=run,
            title=name,
            **fields,
        )

    def ran(self, name: str) -> list[str]:
        return [label for label, _, _ in self.spans if label.startswith(f"{name}:")]


def policy(name: str = "research", **changes) -> SubAgentPolicy:
    base = SubAgentPolicy(
        name, "测试职责", 30, 10, 4, 2_000, 400, ("quote",), ("quote",)
    )  # fmt: skip
    return replace(base, **changes)


@pytest.fixture
def store(home: Path) -> Store:
    home.mkdir(parents=True, exist_ok=True)
    return Store.in_home(home)


def make_runtime(server, home, store, tools, policies, **kwargs) -> AgentRuntime:
    provider = make_provider(model_config(server), stream_timeout_s=10)
    runtime = AgentRuntime(provider, ToolRegistry(tools), home=home, store=store, **kwargs)
    SubAgents(runtime, {p.name: p for p in policies}).attach()
    return runtime


def run(runtime: AgentRuntime, question: str = "帮我研究一下") -> list[dict]:
    return list(runtime.run_stream([{"role": "user", "content": question}]))


def delegation_results(events: list[dict]) -> list[dict]:
    """The result objects the main agent read, in the order it read them."""
    return [
        json.loads(e["result"])
        for e in events
        if e["type"] == "tool_result" and "agent" not in e and e["name"].startswith("delegate_to_")
    ]


def tagged(events: list[dict], kind: str | None = None) -> list[dict]:
    return [e for e in events if "agent" in e and (kind is None or e["type"] == kind)]


def test_delegation_runs_the_sub_agent_and_returns_the_result_object(openai_server, home, store):
    spans = Spans()
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-A 看看 600519"})]),
        Reply(text="主 Agent：茅台走势健康。"),
    ).route(
        "TASK-A",
        Reply(tool_calls=[("quote", {"code": "600519"})], usage=(50, 5, 0, 0)),
        Reply(text="600519 收于 10.5，健康。", usage=(70, 9, 0, 0)),
    )
    runtime = make_runtime(
        openai_server, home, store, [spans.tool("quote"), spans.tool("other")], [policy()]
    )
    events = run(runtime)

    [result] = delegation_results(events)
    assert result["agent"] == "research" and result["status"] == "completed"
    assert result["result"] == "600519 收于 10.5，健康。"
    assert result["tool_calls"] == ["quote"] and result["rounds"] == 2
    assert result["usage"]["input_tokens"] == 120 and result["usage"]["output_tokens"] == 14
    assert result["policy"]["next_action"] == "use_result"
    assert not result["context_truncated"] and not result["result_truncated"]
    assert spans.ran("quote") == ["quote:600519"]
    # the main model reads it as data, inside the untrusted-data marker
    observation = openai_server.bodies[-1]["messages"][-1]["content"]
    assert json.loads(marked_data(observation, "delegate_to_research")) == result
    # the sub-agent saw its own prompt and only its whitelisted tools
    sub_request = next(b for b in openai_server.bodies if "TASK-A" in b["messages"][-1]["content"])
    assert "research 子智能体" in sub_request["messages"][0]["content"]
    assert [t["function"]["name"] for t in sub_request["tools"]] == ["quote"]
    # `model usage` counts the sub-agent's calls apart from the main agent's
    purposes = {r["purpose"]: r["calls"] for r in usage_summary(store, 1)}
    assert purposes == {"chat": 2, "sub_agent": 2}
    # progress arrived tagged, before the delegate's own result
    ids = {e["delegation_id"] for e in tagged(events)}
    assert len(ids) == 1 and next(iter(ids)).startswith("research-")
    kinds = [e["type"] for e in tagged(events)]
    assert kinds.index("tool_start") < kinds.index("tool_result") < kinds.index("done")
    assert "".join(e["text"] for e in tagged(events, "text_delta")) == result["result"]
    delegate_result = next(
        i
        for i, e in enumerate(events)
        if e.get("name") == "delegate_to_research" and e["type"] == "tool_result"
    )
    assert max(i for i, e in enumerate(events) if "agent" in e) < delegate_result
    # usage: the main turn and the session count the sub-agent's tokens too
    done = events[-1]
    assert done["status"] == "completed"
    assert done["usage"]["input_tokens"] == 100 * 2 + 120
    assert runtime.session_usage.output_tokens == 20 * 2 + 14
    # the parent turn's trace records the sub-agent run and points at its own trace
    [entry] = [e for e in read_trace_file(runtime.last_trace.path) if e["type"] == "sub_agent"]
    assert entry["agent"] == "research" and entry["status"] == "completed"
    child_trace = home / "scratchpad" / f"{entry['trace_id']}.jsonl"
    assert any(
        e["type"] == "tool_result" and e["name"] == "quote" for e in read_trace_file(child_trace)
    )


def test_a_tool_outside_the_whitelist_is_refused_at_execution(openai_server, home, store):
    spans = Spans()
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-W"})]),
        Reply(text="好的"),
    ).route(
        "TASK-W",
        Reply(tool_calls=[("other", {"code": "600519"})]),
        Reply(text="无法使用该工具。"),
    )
    runtime = make_runtime(
        openai_server, home, store, [spans.tool("quote"), spans.tool("other")], [policy()]
    )
    events = run(runtime)
    [error] = tagged(events, "tool_error")
    assert "research 子智能体不能使用工具 other" in error["error"]
    assert spans.ran("other") == []
    assert delegation_results(events)[0]["status"] == "completed"


def test_context_over_budget_is_trimmed_to_its_most_recent_part(openai_server, home, store):
    old, recent = "旧材料-OLDEST " * 400, "最新材料-NEWEST。"
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-C", "context": old + recent})]),
        Reply(text="好的"),
    ).route("TASK-C", Reply(text="看过材料。"))
    runtime = make_runtime(openai_server, home, store, [], [policy(context_budget_tokens=300)])
    events = run(runtime)
    brief = next(b for b in openai_server.bodies if "TASK-C" in b["messages"][-1]["content"])
    text = brief["messages"][-1]["content"]
    assert TRIMMED_MARK in text and text.endswith(recent) and text.count("OLDEST") < 400
    assert delegation_results(events)[0]["context_truncated"] is True
    # deterministic: the same input always keeps the same part
    assert trim_context(old + recent, 300) == trim_context(old + recent, 300)


def test_result_over_budget_is_cut_at_a_sentence_and_flagged(openai_server, home, store):
    answer = "第一句结论。" + "第二句依据很长" * 10 + "。第三句没放下。"
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-R"})]),
        Reply(text="好的"),
    ).route("TASK-R", Reply(text=answer))
    runtime = make_runtime(openai_server, home, store, [], [policy(result_budget_chars=80)])
    [result] = delegation_results(run(runtime))
    assert result["result_truncated"] is True
    assert result["result"] == "第一句结论。" + "第二句依据很长" * 10 + "。"
    assert cut_result("短。", 80) == ("短。", False)


def test_round_limit_ends_the_delegation_with_a_fallback_policy(openai_server, home, store):
    spans = Spans()
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-L"})]),
        Reply(text="改用直接工具"),
    ).route(
        "TASK-L",
        Reply(tool_calls=[("quote", {"code": "1"})]),
        Reply(tool_calls=[("quote", {"code": "2"})]),
    )
    runtime = make_runtime(
        openai_server, home, store, [spans.tool("quote")], [policy(max_tool_rounds=1)]
    )
    [result] = delegation_results(run(runtime))
    assert result["status"] == "error" and "1 轮工具往返" in result["error"]
    assert result["policy"]["next_action"] == "fallback_to_direct_tools"
    assert result["policy"]["fallback_tools"] == ["quote"]
    assert spans.ran("quote") == ["quote:1"]


def test_total_timeout_stops_the_sub_agent(openai_server, home, store):
    never = threading.Event()  # the sub-agent's model answers only after its time is up
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-T"})]),
        Reply(text="子智能体超时，我直接回答"),
    ).route("TASK-T", Reply(text="太晚了", hold=never))
    runtime = make_runtime(openai_server, home, store, [], [policy(total_timeout_s=0.5)])
    events = run(runtime)
    never.set()
    [result] = delegation_results(events)
    assert result["status"] == "timeout" and result["policy"]["retryable"] is True
    assert tagged(events, "done")[0]["status"] == "timeout"
    assert events[-1]["status"] == "completed"


def test_a_slow_tool_times_out_as_a_tool_error_for_the_sub_agent(openai_server, home, store):
    spans = Spans()
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-S"})]),
        Reply(text="好的"),
    ).route(
        "TASK-S",
        Reply(tool_calls=[("quote", {"code": "1"})]),
        Reply(text="行情工具超时，无法给出价格。"),
    )
    slow = spans.tool("quote", seconds=5, timeout_s=60)
    runtime = make_runtime(openai_server, home, store, [slow], [policy(tool_timeout_s=0.3)])
    events = run(runtime)
    [error] = tagged(events, "tool_error")
    assert "超过 0.3 秒未完成" in error["error"]
    sub_last = next(
        b for b in reversed(openai_server.bodies) if "子智能体" in b["messages"][0]["content"]
    )
    assert "超过 0.3 秒" in sub_last["messages"][-1]["content"]
    assert delegation_results(events)[0]["status"] == "completed"


def test_cancel_reaches_every_running_sub_agent(openai_server, home, store):
    spans = Spans()
    openai_server.script(
        Reply(
            tool_calls=[
                ("delegate_to_research", {"task": "TASK-X1"}),
                ("delegate_to_analysis", {"task": "TASK-X2"}),
            ]
        ),
    ).route("TASK-X1", Reply(tool_calls=[("quote", {"code": "1"})])).route(
        "TASK-X2", Reply(tool_calls=[("quote", {"code": "2"})])
    )
    slow = spans.tool("quote", seconds=30, concurrency_safe=True)
    runtime = make_runtime(
        openai_server, home, store, [slow], [policy("research"), policy("analysis")]
    )
    events, started = [], set()
    for event in runtime.run_stream([{"role": "user", "content": "研究并分析"}]):
        events.append(event)
        if "agent" in event and event["type"] == "tool_start":
            started.add(event["agent"])
            if started == {"research", "analysis"}:
                runtime.cancel()
    ends = {e["agent"]: e["status"] for e in tagged(events, "done")}
    assert ends == {"research": "cancelled", "analysis": "cancelled"}
    assert [r["status"] for r in delegation_results(events)] == ["cancelled", "cancelled"]
    assert delegation_results(events)[0]["policy"]["next_action"] == "stop_and_report_cancelled"
    assert events[-1]["status"] == "cancelled"


def test_parallel_delegations_overlap_and_answer_in_call_order(openai_server, home, store):
    spans = Spans()
    calls = [
        ("delegate_to_research", {"task": "TASK-P1"}),
        ("delegate_to_analysis", {"task": "TASK-P2"}),
        ("delegate_to_trading", {"task": "TASK-P3"}),
    ]
    openai_server.script(Reply(tool_calls=calls), Reply(text="汇总"))
    for number in (1, 2, 3):
        openai_server.route(
            f"TASK-P{number}",
            Reply(tool_calls=[("quote", {"code": str(number)})]),
            Reply(text=f"结论{number}。"),
        )
    quote = spans.tool("quote", seconds=0.5, concurrency_safe=True)
    runtime = make_runtime(
        openai_server,
        home,
        store,
        [quote],
        [policy(n) for n in ("research", "analysis", "trading")],
    )
    events = run(runtime)
    assert [r["agent"] for r in delegation_results(events)] == ["research", "analysis", "trading"]
    assert [r["result"] for r in delegation_results(events)] == ["结论1。", "结论2。", "结论3。"]
    # every sub-agent started its tool before any of them finished: they ran side by side
    kinds = [(e["type"], e["agent"]) for e in tagged(events)]
    last_start = max(i for i, k in enumerate(kinds) if k[0] == "tool_start")
    first_done = min(i for i, k in enumerate(kinds) if k[0] == "done")
    assert last_start < first_done
    first, second, third = sorted(spans.spans, key=lambda s: s[1])
    assert first[2] > third[1] and second[2] > third[1]  # all three tools ran at once


def test_a_sub_agent_never_approves_a_risky_tool_itself(openai_server, home, store):
    spans = Spans()
    risky = spans.tool("update_portfolio", requires_approval=True)
    trading = policy("trading", tools=("update_portfolio",))
    openai_server.script(
        Reply(tool_calls=[("delegate_to_trading", {"task": "TASK-H"})]),
        Reply(text="好的"),
        Reply(tool_calls=[("delegate_to_trading", {"task": "TASK-Y"})]),
        Reply(text="好的"),
    ).route(
        "TASK-H", Reply(tool_calls=[("update_portfolio", {"code": "1"})]), Reply(text="被拒绝")
    ).route("TASK-Y", Reply(tool_calls=[("update_portfolio", {"code": "2"})]), Reply(text="已调整"))
    headless = make_runtime(openai_server, home, store, [risky], [trading])
    events = run(headless)
    assert "无界面模式，已拒绝执行" in tagged(events, "tool_error")[0]["error"]
    assert spans.ran("update_portfolio") == []

    asked: list[dict] = []
    with_dialog = make_runtime(
        openai_server,
        home,
        store,
        [risky],
        [trading],
        confirm=lambda r: asked.append(r) or Approval("allow"),
    )
    events = run(with_dialog)
    assert [r["name"] for r in asked] == ["update_portfolio"]  # the main session's dialog
    assert spans.ran("update_portfolio") == ["update_portfolio:2"]
    assert tagged(events, "approved")[0]["by"] == "user"


def test_the_spec_governance_table_is_the_default():
    assert {
        n: (
            p.total_timeout_s,
            p.tool_timeout_s,
            p.max_tool_rounds,
            p.context_budget_tokens,
            p.result_budget_chars,
        )
        for n, p in SUB_AGENTS.items()
    } == {
        "research": (240, 90, 8, 24_000, 3_000),
        "analysis": (180, 75, 8, 20_000, 2_500),
        "trading": (120, 45, 6, 12_000, 1_600),
    }
    assert "update_portfolio" not in {t for p in SUB_AGENTS.values() for t in p.tools}


def test_ask_streams_tagged_events_and_text_mode_shows_progress_on_stderr(openai_server, home):
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    for output in ("stream-json", "text"):
        openai_server.script(
            Reply(tool_calls=[("delegate_to_research", {"task": f"TASK-Q-{output}"})]),
            Reply(text="主回答。"),
        ).route(
            f"TASK-Q-{output}",
            Reply(tool_calls=[("query_history", {"source": "recommendation"})]),
            Reply(text="子结论。"),
        )
        result = cli("ask", "研究一下", "-o", output)
        assert result.returncode == 0, result.stderr
        if output == "stream-json":
            events = [json.loads(line) for line in result.stdout.splitlines()]
            sub = [e for e in events if e.get("agent") == "research"]
            assert {e["type"] for e in sub} >= {"tool_start", "tool_result", "text_delta", "done"}
            assert all(e["delegation_id"].startswith("research-") for e in sub)
        else:
            assert result.stdout.strip() == "主回答。"
            assert "[research] → " in result.stderr and "[research] 完成" in result.stderr


def test_at_most_three_delegations_run_at_once(openai_server, home, store):
    spans = Spans()
    calls = [("delegate_to_research", {"task": f"TASK-B{n}"}) for n in range(4)]
    openai_server.script(Reply(tool_calls=calls), Reply(text="汇总"))
    for n in range(4):
        openai_server.route(
            f"TASK-B{n}", Reply(tool_calls=[("quote", {"code": str(n)})]), Reply(text=f"结论{n}。")
        )
    quote = spans.tool("quote", seconds=0.5, concurrency_safe=True)
    runtime = make_runtime(openai_server, home, store, [quote], [policy()])
    events = run(runtime)
    running, most = set(), 0
    for event in tagged(events):
        if event["type"] == "done":
            running.discard(event["delegation_id"])
        else:
            running.add(event["delegation_id"])
            most = max(most, len(running))
    assert most == 3
    assert [r["result"] for r in delegation_results(events)] == [f"结论{n}。" for n in range(4)]
