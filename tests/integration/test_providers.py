"""Providers through the real SDKs against the scripted loopback servers."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from tests.conftest import add_scripted_model, cli, model_config
from tests.model_servers import Reply
from wyckoff.cli.providers.base import ProviderError, StreamCancelled
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.providers.fallback import PRIMARY_RETRY_AFTER_S, FallbackProvider

TOOLS = [
    {
        "name": "analyze_stock",
        "description": "诊断一只股票",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["code"],
        },
    }
]


def provider_for(server, model_id="main", timeout=5.0, **fields):
    return make_provider(model_config(server, model_id, **fields), stream_timeout_s=timeout)


def collect(provider, messages, tools=TOOLS, system="你是 A 股分析师"):
    return list(provider.chat_stream(messages, tools, system))


def test_each_provider_streams_text_tool_call_and_usage(any_server):
    any_server.script(
        Reply(
            text="先看看贵州茅台的走势。",
            tool_calls=[("analyze_stock", {"code": "600519", "days": 30})],
            usage=(120, 33, 0, 0),
        )
    )
    chunks = collect(provider_for(any_server), [{"role": "user", "content": "茅台怎么样"}])

    text_chunks = [c for c in chunks if c["type"] == "text_delta"]
    assert len(text_chunks) >= 2, "text should arrive in several deltas"
    assert "".join(c["text"] for c in text_chunks) == "先看看贵州茅台的走势。"
    (calls_chunk,) = [c for c in chunks if c["type"] == "tool_calls"]
    (call,) = calls_chunk["calls"]
    assert call["name"] == "analyze_stock"
    assert call["args"] == {"code": "600519", "days": 30}
    assert call["id"]
    usage = chunks[-1]
    assert usage["type"] == "usage"
    assert (usage["input_tokens"], usage["output_tokens"]) == (120, 33)
    # The request carried the system prompt, the user text and the tool schema.
    body = str(any_server.bodies[0])
    assert "你是 A 股分析师" in body and "茅台怎么样" in body and "analyze_stock" in body


def test_tool_results_round_trip_to_every_provider(any_server):
    any_server.script(Reply(text="茅台处于上升趋势。"))
    provider = provider_for(any_server)
    history = [
        {"role": "user", "content": "茅台怎么样"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_a", "name": "analyze_stock", "args": {"code": "600519"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "name": "analyze_stock",
            "content": '{"health": "healthy", "close": 1688.0}',
        },
    ]
    reply = provider.chat(history, TOOLS)
    assert reply["text"] == "茅台处于上升趋势。"
    assert "1688.0" in str(any_server.bodies[0])


def _long_tool_conversation(turns: int, calls_per_turn: int) -> list[dict]:
    messages: list[dict] = []
    counter = 0
    for turn in range(turns):
        messages.append({"role": "user", "content": f"第 {turn} 个问题：看看这些股票"})
        calls = []
        for _ in range(calls_per_turn):
            counter += 1
            calls.append(
                {
                    "id": f"toolu_h{counter}",
                    "name": "analyze_stock",
                    "args": {"code": f"{600000 + counter}"},
                }
            )
        messages.append({"role": "assistant", "content": "我来逐一诊断。", "tool_calls": calls})
        for call in calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": "analyze_stock",
                    "content": f"结果 {call['args']['code']}",
                }
            )
        messages.append({"role": "assistant", "content": f"第 {turn} 轮结论。"})
    messages.append({"role": "user", "content": "总结一下"})
    return messages


def _cache_marks(body: dict) -> int:
    blocks = list(body.get("system") or []) + list(body.get("tools") or [])
    for message in body["messages"]:
        if isinstance(message["content"], list):
            blocks += message["content"]
    return sum(1 for b in blocks if "cache_control" in b)


@pytest.mark.parametrize("calls_per_turn", [1, 3, 12])
def test_claude_requests_carry_one_to_four_cache_breakpoints(anthropic_server, calls_per_turn):
    provider = provider_for(anthropic_server)
    messages = _long_tool_conversation(turns=8, calls_per_turn=calls_per_turn)
    anthropic_server.script(Reply(text="好的"))
    provider.chat(messages, TOOLS, "系统提示")
    # Mid-turn: the newest message is a batch of tool results.
    tool_turn = (
        messages[:-1]
        + [
            {"role": "user", "content": "再看 20 只"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"toolu_n{i}", "name": "analyze_stock", "args": {"code": str(i)}}
                    for i in range(20)
                ],
            },
        ]
        + [
            {
                "role": "tool",
                "tool_call_id": f"toolu_n{i}",
                "name": "analyze_stock",
                "content": "ok",
            }
            for i in range(20)
        ]
    )
    anthropic_server.script(Reply(text="好的"))
    provider.chat(tool_turn, TOOLS, "系统提示")

    for body in anthropic_server.bodies:
        assert 1 <= _cache_marks(body) <= 4
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    # The 40-block tool turn got a bridge breakpoint where the previous request ended.
    big = anthropic_server.bodies[1]
    marked_messages = [
        i for i, m in enumerate(big["messages"]) if any("cache_control" in b for b in m["content"])
    ]
    assert len(marked_messages) == 2
    assert big["messages"][marked_messages[0]]["content"][-1]["text"] == "再看 20 只"


def test_anthropic_server_rejects_a_fifth_breakpoint_like_the_real_api(anthropic_server):
    import anthropic

    client = anthropic.Anthropic(api_key="k", base_url=anthropic_server.base_url, max_retries=0)
    content = [
        {"type": "text", "text": f"t{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)
    ]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks"):
        client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": content}]
        )


def test_claude_thinking_blocks_are_sent_back_with_their_signature(anthropic_server):
    anthropic_server.script(
        Reply(thinking="需要先查数据", text="", tool_calls=[("analyze_stock", {"code": "000001"})]),
        Reply(text="平安银行偏弱。"),
    )
    provider = provider_for(anthropic_server, thinking_budget_tokens=2048)
    first = provider.chat([{"role": "user", "content": "平安银行"}], TOOLS)
    assert first["thinking"] == "需要先查数据"
    call = first["tool_calls"][0]
    history = [
        {"role": "user", "content": "平安银行"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call],
            "provider_data": first["provider_data"],
        },
        {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": "弱势"},
    ]
    provider.chat(history, TOOLS)
    sent = anthropic_server.bodies[1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assistant_blocks = sent["messages"][1]["content"]
    assert assistant_blocks[0] == {
        "type": "thinking",
        "thinking": "需要先查数据",
        "signature": "sig-6",
    }
    assert "cache_control" not in assistant_blocks[0]


def test_gemini_thought_signatures_round_trip_exactly(gemini_server):
    gemini_server.script(
        Reply(text="", tool_calls=[("analyze_stock", {"code": "300750"})]),
        Reply(text="宁德时代健康。"),
    )
    provider = provider_for(gemini_server)
    first = provider.chat([{"role": "user", "content": "宁德时代"}], TOOLS)
    call = first["tool_calls"][0]
    history = [
        {"role": "user", "content": "宁德时代"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call],
            "provider_data": first["provider_data"],
        },
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": call["name"],
            "content": '{"health": "healthy"}',
        },
    ]
    assert provider.chat(history, TOOLS)["text"] == "宁德时代健康。"
    contents = gemini_server.bodies[1]["contents"]
    model_part = contents[1]["parts"][0]
    assert base64.b64decode(model_part["thoughtSignature"]) == b"sig-analyze_stock"
    assert model_part["functionCall"]["name"] == "analyze_stock"
    response = contents[2]["parts"][0]["functionResponse"]
    assert response["name"] == "analyze_stock" and response["response"] == {"health": "healthy"}
    # Automatic function calling is off: the SDK must not have run anything itself.
    assert len(gemini_server.requests) == 2


def test_gemini_gets_a_placeholder_signature_for_calls_made_by_another_model(gemini_server):
    gemini_server.script(Reply(text="好"))
    history = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_9", "name": "analyze_stock", "args": {"code": "1"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "call_9",
            "name": "analyze_stock",
            "content": "plain text result",
        },
    ]
    provider_for(gemini_server).chat(history, TOOLS)
    part = gemini_server.bodies[0]["contents"][1]["parts"][0]
    assert base64.b64decode(part["thoughtSignature"]) == b"skip_thought_signature_validator"
    assert gemini_server.bodies[0]["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "result": "plain text result"
    }


def test_openai_reasoning_content_is_streamed_and_sent_back(openai_server):
    openai_server.script(
        Reply(thinking="先想一想", text="", tool_calls=[("analyze_stock", {"code": "600036"})]),
        Reply(text="招商银行稳健。"),
    )
    provider = provider_for(openai_server, model="deepseek-reasoner")
    first = provider.chat([{"role": "user", "content": "招行"}], TOOLS)
    assert first["thinking"] == "先想一想"
    call = first["tool_calls"][0]
    history = [
        {"role": "user", "content": "招行"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call],
            "reasoning_content": first["thinking"],
        },
        {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": "稳健"},
        {"role": "assistant", "content": "招行稳健。"},
        {"role": "user", "content": "那平安呢"},
    ]
    openai_server.script(Reply(text="ok"))
    provider.chat(history, TOOLS)
    assistants = [m for m in openai_server.bodies[-1]["messages"] if m["role"] == "assistant"]
    assert assistants[0]["reasoning_content"] == "先想一想"
    assert assistants[1]["reasoning_content"] == ""  # every earlier turn, "" when empty


def test_reasoning_from_an_old_chat_log_is_sent_back_and_new_reasoning_is_kept(openai_server, home):
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.chat_log import ChatLog, Conversation
    from wyckoff.cli.runtime import AgentRuntime
    from wyckoff.store import Store

    home.mkdir(parents=True, exist_ok=True)
    chat_log = ChatLog(Store.in_home(home))
    session = chat_log.create_session()
    chat_log.append(session, {"role": "user", "content": "招行"})
    chat_log.append(
        session, {"role": "assistant", "content": "招行稳健。", "reasoning_content": "先想一想"}
    )
    conversation = Conversation.resume(chat_log, session)
    conversation.append({"role": "user", "content": "那平安呢"})
    openai_server.script(Reply(thinking="再比较一下", text="平安也稳健。"))
    runtime = AgentRuntime(provider_for(openai_server), default_registry(), home=home)
    events = list(runtime.run_stream(conversation))

    assert events[-1]["text"] == "平安也稳健。"
    (sent,) = [m for m in openai_server.bodies[0]["messages"] if m["role"] == "assistant"]
    assert sent["reasoning_content"] == "先想一想"
    assert chat_log.load(session)[-1]["reasoning_content"] == "再比较一下"


def test_openai_drops_parameters_the_endpoint_rejects(openai_server):
    openai_server.unsupported_params = {"stream_options", "tool_choice"}
    openai_server.script(Reply(text="一", usage=(10, 2, 0, 0)), Reply(text="二"))
    provider = provider_for(openai_server)
    assert provider.chat([{"role": "user", "content": "a"}], TOOLS)["text"] == "一"
    assert provider.chat([{"role": "user", "content": "b"}], TOOLS)["text"] == "二"
    bodies = openai_server.bodies
    assert len(bodies) == 4  # two rejected, then two accepted without asking again
    assert "stream_options" not in bodies[2] and "tool_choice" not in bodies[2]
    assert "stream_options" not in bodies[3] and bodies[3]["tools"]


def test_openai_tool_call_written_as_text_becomes_a_real_call(openai_server):
    text = '我查一下。<tool_call>{"name": "analyze_stock", "arguments": {"code": "002594"}}</tool_call>'
    openai_server.script(Reply(text=text, pieces=9))
    chunks = collect(provider_for(openai_server), [{"role": "user", "content": "比亚迪"}])
    shown = "".join(c["text"] for c in chunks if c["type"] == "text_delta")
    assert shown == "我查一下。"
    (calls,) = [c["calls"] for c in chunks if c["type"] == "tool_calls"]
    assert calls[0]["name"] == "analyze_stock" and calls[0]["args"] == {"code": "002594"}


def test_openai_text_that_only_looks_like_a_tag_is_kept(openai_server):
    openai_server.script(Reply(text="比较 a<b 与 <tool_call>不是 JSON", pieces=7))
    chunks = collect(provider_for(openai_server), [{"role": "user", "content": "x"}])
    assert (
        "".join(c["text"] for c in chunks if c["type"] == "text_delta")
        == "比较 a<b 与 <tool_call>不是 JSON"
    )
    assert not [c for c in chunks if c["type"] == "tool_calls"]


def test_ollama_style_calls_all_at_index_zero_are_told_apart(openai_server):
    openai_server.script(
        Reply(
            tool_calls=[("analyze_stock", {"code": "1"}), ("analyze_stock", {"code": "2"})],
            ollama_index0=True,
        )
    )
    reply = provider_for(openai_server).chat([{"role": "user", "content": "x"}], TOOLS)
    assert [c["args"]["code"] for c in reply["tool_calls"]] == ["1", "2"]


@pytest.mark.parametrize("kind", ["openai", "claude"])  # Gemini sends args as JSON objects
def test_malformed_tool_arguments_are_kept_for_the_runtime(kind, request):
    server = request.getfixturevalue("openai_server" if kind == "openai" else "anthropic_server")
    server.script(Reply(tool_calls=[("analyze_stock", {})], raw_arguments='{"code": "6005'))
    reply = provider_for(server).chat([{"role": "user", "content": "x"}], TOOLS)
    assert reply["tool_calls"][0]["args"] == {"__malformed_arguments__": '{"code": "6005'}


def test_openai_cached_tokens_are_reported_separately(openai_server):
    openai_server.script(Reply(text="ok", usage=(40, 5, 60, 0)))
    reply = provider_for(openai_server).chat([{"role": "user", "content": "x"}], [])
    assert reply["usage"] == {
        "input_tokens": 40,
        "output_tokens": 5,
        "cache_read_tokens": 60,
        "cache_write_tokens": 0,
    }


def test_claude_cache_usage_is_reported(anthropic_server):
    anthropic_server.script(Reply(text="ok", usage=(12, 5, 3000, 800)))
    reply = provider_for(anthropic_server).chat([{"role": "user", "content": "x"}], [])
    assert reply["usage"] == {
        "input_tokens": 12,
        "output_tokens": 5,
        "cache_read_tokens": 3000,
        "cache_write_tokens": 800,
    }


# --- fallback -------------------------------------------------------------------------------


def _fallback(primary_server, fallback_server, timeout=5.0, **kwargs):
    """The primary stalls after `timeout` s of silence; the backup gets the usual 5 s (its
    first chunk includes importing its SDK, which a loaded machine can make slow)."""
    primary = make_provider(model_config(primary_server, "primary"), stream_timeout_s=timeout)
    fallback = make_provider(model_config(fallback_server, "backup"), stream_timeout_s=5.0)
    return FallbackProvider(primary, fallback, **kwargs)


@pytest.mark.parametrize(
    "failure",
    [
        Reply(status=429, error_message="rate limited"),
        Reply(status=503),
        Reply(status=529, error_message="Overloaded"),
    ],
    ids=["429", "503", "529"],
)
def test_fallback_takes_over_on_retryable_failures(anthropic_server, openai_server, failure):
    anthropic_server.script(failure)
    openai_server.script(Reply(text="备用模型的回答"))
    provider = _fallback(anthropic_server, openai_server)
    chunks = list(provider.chat_stream([{"role": "user", "content": "x"}], TOOLS))
    switch = chunks[0]
    assert (
        switch["type"] == "provider_switch"
        and switch["from"] == "primary"
        and switch["to"] == "backup"
    )
    assert str(failure.status) in switch["reason"]
    assert len(anthropic_server.requests) == 1  # no SDK retry: the fallback answers at once
    assert "".join(c["text"] for c in chunks if c["type"] == "text_delta") == "备用模型的回答"
    assert provider.using_fallback and provider.name == "backup"
    assert provider.context_window == 1_000_000  # follows the active model (gpt-4.1)


def test_the_primary_is_tried_again_once_its_retry_window_has_passed(
    anthropic_server, openai_server
):
    now = [1000.0]
    provider = _fallback(anthropic_server, openai_server, clock=lambda: now[0])
    anthropic_server.script(Reply(status=529, error_message="Overloaded"))
    openai_server.script(Reply(text="备用一"), Reply(text="备用二"))
    question = [{"role": "user", "content": "x"}]
    assert provider.chat(question, [])["text"] == "备用一"
    now[0] += PRIMARY_RETRY_AFTER_S - 1  # still inside the window: the fallback answers
    assert provider.chat(question, [])["text"] == "备用二" and provider.using_fallback
    assert len(anthropic_server.requests) == 1
    now[0] += 1
    assert not provider.using_fallback and provider.name == "primary"
    anthropic_server.script(Reply(text="主模型恢复了"))
    chunks = list(provider.chat_stream(question, []))
    assert [c for c in chunks if c["type"] == "provider_switch"] == []
    assert "".join(c["text"] for c in chunks if c["type"] == "text_delta") == "主模型恢复了"
    assert len(anthropic_server.requests) == 2 and len(openai_server.requests) == 2


def test_fallback_takes_over_when_the_stream_goes_silent(openai_server, gemini_server):
    openai_server.script(Reply(text="太慢了", stall_s=3))
    gemini_server.script(Reply(text="及时的回答"))
    provider = _fallback(openai_server, gemini_server, timeout=0.5)
    reply = provider.chat([{"role": "user", "content": "x"}], [])
    assert reply["text"] == "及时的回答"


def test_fallback_takes_over_on_an_error_mid_stream(anthropic_server, gemini_server):
    anthropic_server.script(Reply(text="前半句……后半句", fail_mid_stream=True, pieces=4))
    gemini_server.script(Reply(text="完整回答"))
    provider = _fallback(anthropic_server, gemini_server)
    chunks = list(provider.chat_stream([{"role": "user", "content": "x"}], []))
    kinds = [c["type"] for c in chunks]
    assert kinds.index("provider_switch") > kinds.index("text_delta")  # partial text came first
    after = chunks[kinds.index("provider_switch") + 1 :]
    assert "".join(c["text"] for c in after if c["type"] == "text_delta") == "完整回答"


@pytest.mark.parametrize("status", [401, 403, 404, 400])
def test_configuration_errors_fail_fast_without_fallback(openai_server, anthropic_server, status):
    openai_server.script(
        Reply(status=status, error_message="bad thing for key test-key-primary-0123456789")
    )
    provider = _fallback(openai_server, anthropic_server)
    with pytest.raises(ProviderError) as caught:
        provider.chat([{"role": "user", "content": "x"}], [])
    assert not caught.value.retryable
    assert "primary" in caught.value.message and str(status) in caught.value.message
    assert "test-key-primary-0123456789" not in caught.value.message
    assert anthropic_server.requests == []


def test_a_stall_without_fallback_is_one_clear_error(openai_server):
    openai_server.script(Reply(text="x", stall_s=2))
    provider = provider_for(openai_server, timeout=0.3)
    with pytest.raises(ProviderError, match="秒没有任何输出"):
        provider.chat([{"role": "user", "content": "x"}], [])


def test_connection_refused_is_retryable_and_clear(tmp_path):
    from wyckoff.config import ModelConfig

    provider = make_provider(
        ModelConfig(
            id="down",
            provider="openai",
            model="gpt-4.1",
            base_url="http://127.0.0.1:9/v1",
            api_key="k" * 10,
        )
    )
    with pytest.raises(ProviderError) as caught:
        provider.chat([{"role": "user", "content": "x"}], [])
    assert caught.value.retryable and "无法连接模型 down" in caught.value.message


def test_cancel_passes_through_the_fallback_while_the_primary_is_silent(
    openai_server, anthropic_server
):
    openai_server.script(Reply(text="迟到的回答", stall_s=10))
    anthropic_server.script(Reply(text="备用模型的回答"))
    provider = _fallback(openai_server, anthropic_server, timeout=20)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(StreamCancelled):
        list(provider.chat_stream([{"role": "user", "content": "x"}], [], cancel_event=cancel))
    assert anthropic_server.requests == [] and not provider.using_fallback


# --- SDK retries ----------------------------------------------------------------------------


def test_without_a_fallback_a_rate_limit_is_waited_out(any_server):
    any_server.script(
        Reply(status=429, error_message="rate limited", retry_after=0.01),
        Reply(text="限流过后的回答"),
    )
    reply = provider_for(any_server).chat([{"role": "user", "content": "x"}], [])
    assert reply["text"] == "限流过后的回答"
    assert len(any_server.requests) == 2


def test_ask_without_a_fallback_answers_after_a_rate_limit(openai_server):
    add_scripted_model(openai_server, "only")
    openai_server.script(Reply(status=429, retry_after=0.01), Reply(text="稍等之后的回答。"))
    result = cli("ask", "今天怎么样", "-o", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "completed" and payload["text"] == "稍等之后的回答。"


def test_a_configured_fallback_answers_a_rate_limit_without_retrying(
    openai_server, anthropic_server
):
    from wyckoff.cli.providers.factory import build_provider
    from wyckoff.config import WyckoffConfig

    config = WyckoffConfig(
        models=[model_config(openai_server, "primary"), model_config(anthropic_server, "backup")],
        default="primary",
        fallback="backup",
    )
    openai_server.script(Reply(status=429, retry_after=0.01), Reply(text="主模型重试后的回答。"))
    anthropic_server.script(Reply(text="备用模型的回答。"))
    reply = build_provider(config).chat([{"role": "user", "content": "x"}], [])
    assert reply["text"] == "备用模型的回答。"
    assert len(openai_server.requests) == 1
