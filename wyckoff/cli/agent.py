"""One place that assembles a working agent (config, provider, tools, store, session) so the
headless `ask`, the TUI and the tests build it the same way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.messages import Message
from wyckoff.cli.runtime import MAX_TOOL_ROUNDS, AgentRuntime, ConfirmCallback
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
    memories: Any = None
    extraction: threading.Thread | None = None  # the latest memory extraction

    def ask_model(self, system_prompt: str, text: str) -> str:
        """One plain model call (memory extraction and dedup) on the current provider."""
        reply = self.runtime.provider.chat([{"role": "user", "content": text}], [], system_prompt)
        return reply["text"]

    def recall(self, text: str) -> str:
        """This turn's `<relevant-memories>` block; "记住：..." is saved first (add semantics).
        A memory failure never stops the turn."""
        from wyckoff.memory.extraction import remember_request
        from wyckoff.memory.recall import build_memory_context

        try:
            request = remember_request(text)
            notes = (self._remember(request),) if request else ()
            return build_memory_context(self.memories, text, home=self.home, notes=notes)
        except Exception:
            return ""

    def _remember(self, request: str) -> str:
        """Save what the user asked to remember; the note tells the model what happened."""
        from wyckoff.errors import WyckoffError
        from wyckoff.memory.extraction import remember

        try:
            outcome = remember(
                self.memories, request, source_ref=f"chat_log:{self.conversation.session_id}"
            )
        except WyckoffError as exc:
            return f"（用户在本条消息里要求记住一条偏好，但没有保存：{exc.message}）"
        return f"（用户在本条消息里要求记住一条偏好：{outcome.sentence()}）"

    def flush_before_compaction(self, head: list[Message]) -> None:
        from wyckoff.memory.extraction import flush_memory_before_compaction

        flush_memory_before_compaction(
            self.memories, head, self.ask_model, session_id=self.conversation.session_id
        )

    def end_session(self, *, skip_layers: bool = False) -> threading.Thread:
        """Extract memories from the conversation being left, in the background (the thread
        is kept in `extraction`)."""
        from wyckoff.memory.extraction import extract_in_background

        thread = extract_in_background(
            self.memories,
            list(self.conversation),
            self.ask_model,
            session_id=self.conversation.session_id,
            skip_layers=skip_layers,
        )
        self.extraction = thread
        return thread


def open_agent(
    *,
    model_id: str | None = None,
    session_id: str | None = None,
    continue_latest: bool = False,
    max_rounds: int = MAX_TOOL_ROUNDS,
    approve: list[str] | None = None,
    approve_all: bool = False,
    confirm: ConfirmCallback | None = None,
    ask_user: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Agent:
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.providers.factory import build_provider
    from wyckoff.cli.skills import SkillLibrary
    from wyckoff.cli.sub_agents import SubAgents
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.mcp.client import attach_mcp_servers
    from wyckoff.memory.store import MemoryStore
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
    runtime.context.skills = skills
    SubAgents(runtime).attach()
    agent = Agent(
        runtime, conversation, chat_log, home, config, skills, mcp_warnings, MemoryStore(store)
    )
    runtime.memory_recall = agent.recall
    runtime.memory_flush = agent.flush_before_compaction
    return agent


def _conversation(chat_log: ChatLog, session_id: str | None, continue_latest: bool) -> Conversation:
    if session_id:
        return Conversation.resume(chat_log, session_id)
    if continue_latest:
        latest = chat_log.latest_session()
        if latest is None:
            raise UsageError("还没有可继续的会话：去掉 --continue 开始新会话。")
        return Conversation.resume(chat_log, latest)
    return Conversation.start(chat_log)
