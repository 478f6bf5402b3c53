"""Intraday: the market's clock in the prompt, minute bars, the tail-session check, the
intraday tools and MCP tier 2, run through the CLI against a demo market and scripted models."""

from __future__ import annotations

import pytest

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply

TRADING_DAY_1446 = "2026-12-02T14:46:00+08:00"  # a Wednesday


@pytest.fixture
def configured(home, openai_server):
    add_scripted_model(openai_server, "local")
    return openai_server


def system_prompt_of(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def test_ask_at_1446_names_the_tail_session_and_the_partial_bar(configured):
    configured.script(Reply(text="好。"))
    result = cli("ask", "现在能买吗？", env={"WYCKOFF_NOW": TRADING_DAY_1446})
    assert result.returncode == 0, result.stderr
    prompt = system_prompt_of(configured.bodies[0])
    assert "市场时段：尾盘" in prompt and "14:46" in prompt
    assert "2026-12-02 的日线尚未收盘" in prompt


def test_ask_on_a_saturday_says_the_market_is_closed(configured):
    configured.script(Reply(text="好。"))
    result = cli("ask", "现在能买吗？", env={"WYCKOFF_NOW": "2026-12-05T10:00:00+08:00"})
    assert result.returncode == 0, result.stderr
    prompt = system_prompt_of(configured.bodies[0])
    assert "市场时段：休市" in prompt and "的日线尚未收盘，" not in prompt


def test_a_tool_on_todays_bar_during_the_session_says_the_bar_is_partial(
    configured, home, install_demo
):
    store = install_demo(home, 60)
    cli("data", "use", "demo")
    last = str(store.execute("SELECT MAX(date) FROM bars")[0][0])
    configured.script(Reply(tool_calls=[("analyze_stock", {"code": "000001"})]), Reply(text="好。"))
    result = cli("ask", "平安银行怎么样", env={"WYCKOFF_NOW": f"{last}T10:05:00+08:00"})
    assert result.returncode == 0, result.stderr
    tool_message = next(m for m in configured.bodies[1]["messages"] if m["role"] == "tool")
    assert f"{last} 的日线尚未收盘" in tool_message["content"]
