"""The runtime loop with the in-process scripted provider: no HTTP, no SDK, real SQLite.

What goes over the wire is tested against the loopback servers (tests/test_runtime.py,
tests/test_providers.py); these tests are about the loop itself.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.model_servers import Reply, check_tool_pairing
from tests.scripted_provider import ScriptedProvider
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.providers.claude import to_claude_messages
from wyckoff.cli.runtime import AgentRuntime
from wyckoff.cli.tools import ToolSpec
from wyckoff.store import Store


class CodeParams(BaseModel):
    code: str


def price_tool(seen: list[str]) -> ToolSpec:
    def lookup(params: CodeParams, context) -> dict:
        seen.append(params.code)
        return {"code": params.code, "close": 10.5, "source": "test"}

    return ToolSpec(
        name="lookup", description="查价格", params=CodeParams, func=lookup, title="查询价格"
    )


@pytest.fixture
def conversation(home: Path) -> Conversation:
    home.mkdir(parents=True, exist_ok=True)
    return Conversation.start(ChatLog(Store.in_home(home)))


def runtime_with(provider: ScriptedProvider, home: Path, *tools: ToolSpec) -> AgentRuntime:
    registry = default_registry()
    for spec in tools:
        registry.register(spec)
    return AgentRuntime(provider, registry, home=home, store=None)


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [event for event in events if event["type"] == kind]


def test_a_tool_call_goes_round_and_the_answer_is_saved(home, conversation):
    seen: list[str] = []
    provider = ScriptedProvider(
        Reply(text="我先查一下。", tool_calls=[("lookup", {"code": "600519"})]),
        Reply(text="茅台收盘 10.5。", usage=(50, 10, 0, 0)),
    )
    runtime = runtime_with(provider, home, price_tool(seen))
    conversation.append({"role": "user", "content": "茅台多少钱"})

    events = list(runtime.run_stream(conversation))

    assert seen == ["600519"]
    assert [e["name"] for e in of_type(events, "tool_start")] == ["lookup"]
    assert of_type(events, "tool_result")[0]["name"] == "lookup"
    assert events[-1]["status"] == "completed" and events[-1]["text"] == "茅台收盘 10.5。"
    assert events[-1]["usage"]["input_tokens"] == 100 + 50
    # The model's second request carried the tool's result back, marked as outside data.
    observation = provider.requests[1]["messages"][-1]
    assert observation["role"] == "tool" and '"close": 10.5' in observation["content"]
    assert "<untrusted-data" in observation["content"]
    # Every message was saved as it was appended: a resumed session has the whole turn.
    resumed = Conversation.resume(ChatLog(Store.in_home(home)), conversation.session_id)
    assert [m["role"] for m in resumed] == ["user", "assistant", "tool", "assistant"]


def test_malformed_arguments_go_back_to_the_model_which_retries(home, conversation):
    seen: list[str] = []
    provider = ScriptedProvider(
        Reply(tool_calls=[("lookup", {})], raw_arguments='{"code": "6005'),
        Reply(tool_calls=[("lookup", {"code": "600519"})]),
        Reply(text="好了"),
    )
    runtime = runtime_with(provider, home, price_tool(seen))
    conversation.append({"role": "user", "content": "茅台"})

    events = list(runtime.run_stream(conversation))

    assert "不是合法的 JSON" in of_type(events, "tool_error")[0]["error"]
    assert seen == ["600519"]  # the tool never ran with the broken arguments
    assert "工具错误" in provider.requests[1]["messages"][-1]["content"]
    assert events[-1]["status"] == "completed" and events[-1]["text"] == "好了"


def test_cancel_while_the_model_is_silent_ends_the_turn_and_the_next_one_runs(home, conversation):
    silent = threading.Event()
    provider = ScriptedProvider(Reply(text="永远不会到", hold=silent), Reply(text="第二轮回答"))
    runtime = runtime_with(provider, home)
    conversation.append({"role": "user", "content": "慢问题"})
    try:
        events = []
        for event in runtime.run_stream(conversation):
            events.append(event)
            if event["type"] == "model_start":
                runtime.cancel()
    finally:
        silent.set()  # let the abandoned stream's reader thread finish

    assert events[-1]["status"] == "cancelled"
    assert not of_type(events, "text_delta")
    assert [m["role"] for m in conversation] == ["user"]  # nothing half-written
    conversation.append({"role": "user", "content": "换个问题"})
    assert list(runtime.run_stream(conversation))[-1]["text"] == "第二轮回答"


def test_cancel_during_a_tool_tells_it_to_stop_and_keeps_the_history_valid(home, conversation):
    started, stopped = threading.Event(), threading.Event()

    def waits_for_cancel(params: CodeParams, context) -> str:
        started.set()
        if context.cancel_event.wait(30):
            stopped.set()
        return "stopped"

    slow = ToolSpec(
        name="slow", description="慢", params=CodeParams, func=waits_for_cancel, title="慢工具"
    )
    provider = ScriptedProvider(Reply(tool_calls=[("slow", {"code": "1"})]))
    runtime = runtime_with(provider, home, slow)
    conversation.append({"role": "user", "content": "慢慢算"})
    canceller = threading.Thread(target=lambda: started.wait(10) and runtime.cancel())
    canceller.start()

    events = list(runtime.run_stream(conversation))
    canceller.join()

    assert events[-1]["status"] == "cancelled"
    assert stopped.wait(10)
    assert conversation[-1]["role"] == "tool"  # the call has its answer: resumable anywhere
    assert check_tool_pairing(to_claude_messages(list(conversation))) is None
