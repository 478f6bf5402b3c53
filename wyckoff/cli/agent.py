"""One place that assembles a working agent (config, provider, tools, store, session) so the
headless `ask`, the TUI and the tests build it the same way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.runtime import MAX_TOOL_ROUNDS, AgentRuntime
from wyckoff.errors import UsageError


@dataclass
class Agent:
    runtime: AgentRuntime
    conversation: Conversation
    chat_log: ChatLog
    home: Path
    config: Any
    skills: Any
    mcp_warnings: list[str]  # configured MCP servers that could not be used


def open_agent(
    *,
    model_id: str | None = None,
    session_id: str | None = None,
    continue_latest: bool = False,
    max_rounds: int = MAX_TOOL_ROUNDS,
    approve: list[str] | None = None,
    approve_all: bool = False,
    confirm=None,
    ask_user=None,
) -> Agent:
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.model_registry import build_provider
    from wyckoff.cli.skills import SkillLibrary
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.mcp.client import attach_mcp_servers
    from wyckoff.store import Store

    home = wyckoff_home()
    config = load_config(home)
    provider = build_provider(config, model_id)
    store = Store.in_home(home)
    chat_log = ChatLog(store)
    conversation = _conversation(chat_log, session_id, continue_latest)
    registry = default_registry()
    mcp_warnings = attach_mcp_servers(registry, home)
    skills = SkillLibrary(home)
    unknown = sorted(set(approve or []) - set(registry.names))
    if unknown:
        raise UsageError(
            f"--approve 里有未知的工具：{', '.join(unknown)}。可用工具：{', '.join(registry.names)}。"
        )
    runtime = AgentRuntime(
        provider,
        registry,
        home=home,
        store=store,
        session_id=conversation.session_id,
        confirm=confirm,
        ask_user=ask_user,
        approve=approve or [],
        approve_all=approve_all,
        background=BackgroundTaskManager(store),
        max_rounds=max_rounds,
        skills_reminder=lambda: skills.reminder(),
    )
    runtime.context.state["skills"] = skills
    return Agent(runtime, conversation, chat_log, home, config, skills, mcp_warnings)


def _conversation(chat_log: ChatLog, session_id: str | None, continue_latest: bool) -> Conversation:
    if session_id:
        return Conversation.resume(chat_log, session_id)
    if continue_latest:
        latest = chat_log.latest_session()
        if latest is None:
            raise UsageError("还没有可继续的会话：去掉 --continue 开始新会话。")
        return Conversation.resume(chat_log, latest)
    return Conversation.start(chat_log)
