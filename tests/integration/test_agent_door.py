"""The one door front ends use (cli/agent.py): approvals as futures the front end resolves,
out-of-turn updates in one stream, session switching in one method, the config read once
per turn. Real scripted model server, real SQLite; no widget involved."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import add_scripted_model, model_config
from tests.model_servers import Reply
from wyckoff.agents.portfolio import Portfolio
from wyckoff.cli.agent import Agent, open_agent
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.runtime import AgentRuntime, Approval
from wyckoff.errors import WyckoffError
from wyckoff.store import Store

SET_CASH = {"action": "set_cash", "cash": 1_000_000}


@pytest.fixture
def agent(home, openai_server):
    add_scripted_model(openai_server)
    opened = open_agent(interactive=True)
    yield opened
    opened.close()


def turn_in_background(agent: Agent, text: str) -> tuple[threading.Thread, list[dict]]:
    agent.conversation.append({"role": "user", "content": text})
    events: list[dict] = []
    thread = threading.Thread(target=lambda: events.extend(agent.run_turn()), daemon=True)
    thread.start()
    return thread, events


def cash(home: Path) -> float:
    return Portfolio(Store.in_home(home)).cash()


def test_a_risky_call_waits_for_the_answer_the_front_end_resolves(agent, openai_server, home):
    openai_server.script(Reply(tool_calls=[("update_portfolio", SET_CASH)]), Reply(text="好"))
    thread, events = turn_in_background(agent, "把现金设为一百万")
    update = next(agent.updates())
    assert update["type"] == "approval_request"
    assert update["request"]["description"] == "把现金从 0.00 元改为 1,000,000.00 元"
    assert cash(home) == 0  # nothing runs before the user answers
    update["answer"].set_result(Approval("allow"))
    thread.join(30)
    assert [e["by"] for e in events if e["type"] == "approved"] == ["user"]
    assert events[-1]["status"] == "completed" and cash(home) == 1_000_000


def test_closing_answers_a_waiting_approval_with_deny_and_ends_the_updates(
    agent, openai_server, home
):
    openai_server.script(Reply(tool_calls=[("update_portfolio", SET_CASH)]), Reply(text="好"))
    thread, events = turn_in_background(agent, "把现金设为一百万")
    updates = agent.updates()
    assert next(updates)["type"] == "approval_request"
    agent.close()  # the user quits with the dialog open
    thread.join(30)
    assert not thread.is_alive() and cash(home) == 0
    assert list(updates) == []  # the front end's reader ends


def test_sessions_switch_through_one_method_and_a_busy_session_changes_nothing(
    agent, openai_server, home
):
    openai_server.script(Reply(text="第一个回答"))
    thread, _ = turn_in_background(agent, "你好")
    thread.join(30)
    first = agent.conversation.session_id
    forked = agent.switch_session("fork")
    assert forked != first and [m["content"] for m in agent.conversation][-1] == "第一个回答"
    fresh = agent.switch_session("new")
    assert fresh not in (first, forked) and len(agent.conversation) == 0
    # another process has the first session open
    with holding_session(home, first), pytest.raises(WyckoffError, match="正忙"):
        agent.switch_session("resume", first)
    assert agent.conversation.session_id == fresh and agent.status().context_used > 0
    assert agent.switch_session("resume", first) == first and len(agent.conversation) == 2


class holding_session:
    """Another process holding a session's lock, as a second `wyckoff` would."""

    def __init__(self, home: Path, session_id: str) -> None:
        self.lock = home / "locks" / f"session-{session_id}.lock"

    def __enter__(self) -> None:
        code = (
            "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX);"
            " print('held', flush=True); sys.stdin.read()"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(self.lock)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline().strip() == "held"

    def __exit__(self, *exc) -> None:
        self.process.communicate("")


def test_a_turns_tools_read_the_config_once(demo_home, openai_server):
    """A config file broken while the turn runs (here: while the approval dialog is open)
    does not fail the turn's later market calls: the turn read it once, at its start."""
    config = demo_home / "wyckoff.json"

    def break_config_then_deny(request: dict) -> Approval:
        config.write_text("{broken", encoding="utf-8")
        return Approval("deny")

    openai_server.script(
        Reply(tool_calls=[("update_portfolio", SET_CASH)]),
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="好"),
    )
    provider = make_provider(model_config(openai_server), stream_timeout_s=5)
    runtime = AgentRuntime(
        provider,
        default_registry(),
        home=demo_home,
        store=Store.in_home(demo_home),
        confirm=break_config_then_deny,
    )
    events = list(runtime.run_stream([{"role": "user", "content": "大盘怎么样"}]))
    overview = [e for e in events if e.get("name") == "get_market_overview" and "elapsed_s" in e]
    assert [e["type"] for e in overview] == ["tool_result"], overview
