"""One place that assembles a working agent (config, provider, tools, store, session) so the
headless `ask`, the TUI and the tests build it the same way, and the one door front ends go
through: turns, sessions, status, the chart, background updates and approvals are typed
methods here; a front end never reads `agent.runtime`.

Out-of-turn events reach the front end through `updates()`: background `task_update`s, and,
for an interactive agent, `approval_request` / `question` events carrying a Future the front
end resolves with the user's answer (the turn waits on it; `close()` answers the rest with
"deny" / "skipped")."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.events import RuntimeEvent
from wyckoff.cli.messages import Message
from wyckoff.cli.providers.base import LLMProvider
from wyckoff.cli.runtime import MAX_TOOL_ROUNDS, AgentRuntime, Approval
from wyckoff.cli.tools import ToolRegistry
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.cli.skills import SkillLibrary
    from wyckoff.config import WyckoffConfig
    from wyckoff.memory.store import MemoryStore
    from wyckoff.store import Store

SessionChoice = Literal["new", "resume", "fork", "latest"]
UNANSWERED_APPROVAL = Approval("deny")
UNANSWERED_QUESTION = {"status": "skipped", "answer": ""}


T = TypeVar("T")


class ApprovalRequest(TypedDict):
    """A risky call waits for the user: resolve `answer` with an Approval."""

    type: Literal["approval_request"]
    request: dict[str, Any]  # id, name, args, title, description, describe, always_label
    answer: Future[Approval]


class QuestionRequest(TypedDict):
    """The model's ask_user question: resolve `answer` with {"status", "answer"}."""

    type: Literal["question"]
    question: dict[str, Any]
    answer: Future[dict[str, Any]]


AgentUpdate = RuntimeEvent | ApprovalRequest | QuestionRequest


@dataclass(frozen=True)
class AgentStatus:
    """What a status line shows."""

    model_id: str  # the configured model answering now
    on_fallback: bool
    context_used: int  # tokens the next model call would send
    context_window: int
    usage: dict[str, Any]  # this session's totals, as `UsageTotals.as_dict`
    memories: int


class Agent:
    def __init__(
        self,
        *,
        home: Path,
        config: WyckoffConfig,
        provider: LLMProvider,
        registry: ToolRegistry,
        store: Store,
        chat_log: ChatLog,
        conversation: Conversation,
        skills: SkillLibrary,
        mcp_warnings: list[str],
        memories: MemoryStore,
        max_rounds: int = MAX_TOOL_ROUNDS,
        approve: list[str] | None = None,
        approve_all: bool = False,
        interactive: bool = False,
        use_memory: bool = True,
    ) -> None:
        from wyckoff.cli.sub_agents import SubAgents

        self.home, self.config, self.chat_log = home, config, chat_log
        self.conversation = conversation
        self.skills, self.memories = skills, memories
        self.mcp_warnings = mcp_warnings  # configured MCP servers that could not be used
        self.extraction: threading.Thread | None = None  # the latest memory extraction
        self._updates: queue.Queue[AgentUpdate | None] = queue.Queue()
        self._waiting: dict[Future, Any] = {}  # unanswered requests and their safe default
        self._lock = threading.Lock()
        self._closed = False
        self._config_stamp: int | None = None
        self.runtime = AgentRuntime(
            provider,
            registry,
            home=home,
            store=store,
            session_id=conversation.session_id,
            confirm=self._confirm if interactive else None,
            ask_user=self._ask_user if interactive else None,
            approve=approve or [],
            approve_all=approve_all,
            background=BackgroundTaskManager(store),
            max_rounds=max_rounds,
            skills=skills,
            skills_reminder=skills.reminder,
            memory_recall=self.recall if use_memory else None,
            memory_flush=self.flush_before_compaction if use_memory else None,
        )
        self.runtime.on_task_update(self._updates.put)
        SubAgents(self.runtime).attach()

    # --- turns ----------------------------------------------------------------------------

    def run_turn(self, *, wait_for_background: bool = False) -> Iterator[RuntimeEvent]:
        """Answer the conversation's last message; see AgentRuntime.run_stream."""
        return self.runtime.run_stream(self.conversation, wait_for_background=wait_for_background)

    def cancel(self) -> None:
        self.runtime.cancel()

    @property
    def cancel_requested(self) -> bool:
        return self.runtime.cancel_requested

    def take_notifications(self) -> int:
        """Add finished background tasks' notifications to the conversation; how many."""
        manager = self.runtime.background
        notes = manager.take_notifications(self.conversation.session_id) if manager else []
        for note in notes:
            self.conversation.append(note)
        return len(notes)

    def compact(self) -> RuntimeEvent | None:
        """Compact the conversation now; None if it gave up."""
        return self.runtime.compact(self.conversation)

    def record_front_end_error(self, message: str, details: str) -> None:
        self.runtime.record_front_end_error(message, details)

    # --- out-of-turn updates and approvals ------------------------------------------------

    def updates(self) -> Iterator[AgentUpdate]:
        """Background updates and requests for the user, as they come; ends on `close()`."""
        while (update := self._updates.get()) is not None:
            yield update

    def _confirm(self, request: dict[str, Any]) -> Approval:
        future: Future[Approval] = Future()
        update: ApprovalRequest = {"type": "approval_request", "request": request, "answer": future}
        return self._wait_for_user(update, future, UNANSWERED_APPROVAL)

    def _ask_user(self, question: dict[str, Any]) -> dict[str, Any]:
        future: Future[dict[str, Any]] = Future()
        update: QuestionRequest = {"type": "question", "question": question, "answer": future}
        return self._wait_for_user(update, future, UNANSWERED_QUESTION)

    def _wait_for_user(self, update: AgentUpdate, future: Future[T], unanswered: T) -> T:
        with self._lock:
            if self._closed:
                return unanswered
            self._waiting[future] = unanswered
        self._updates.put(update)
        try:
            return future.result()
        except CancelledError:  # closed before the user answered
            return unanswered
        finally:
            with self._lock:
                self._waiting.pop(future, None)

    def close(self) -> None:
        """The front end is leaving: stop the turn, answer what waits with its safe default
        and end `updates()`; memories are extracted from the conversation in the background."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiting = list(self._waiting)
        self.cancel()
        for future in waiting:
            future.cancel()
        self._updates.put(None)
        self.end_session(skip_layers=True)

    # --- sessions -------------------------------------------------------------------------

    def switch_session(self, choice: SessionChoice, session_id: str | None = None) -> str:
        """Go on in another session: a new one, a saved one (`resume`), or a copy of the
        current one (`fork`). Memories are extracted from the one left; its "always allow"
        answers do not carry over. Raises WyckoffError (e.g. the session is busy)."""
        conversation = open_conversation(
            self.chat_log, choice, session_id or self.conversation.session_id
        )
        new_id = conversation.session_id
        assert new_id is not None  # opened sessions are saved ones
        self.end_session()
        self.conversation = conversation
        self.runtime.new_session(new_id)
        return new_id

    def end_session(self, *, skip_layers: bool = False) -> threading.Thread:
        """Extract memories from the conversation being left, in the background (the thread
        is kept in `extraction`)."""
        from wyckoff.memory.extraction import extract_in_background

        self.extraction = extract_in_background(
            self.memories,
            list(self.conversation),
            self.model_caller("extraction"),
            session_id=self.conversation.session_id,
            skip_layers=skip_layers,
            layers_ask=self.model_caller("layers"),
        )
        return self.extraction

    # --- status, models, charts, tools ----------------------------------------------------

    def status(self) -> AgentStatus:
        from wyckoff.cli.tokens import count_messages

        runtime = self.runtime
        provider = runtime.provider
        return AgentStatus(
            model_id=provider.name,
            on_fallback=getattr(provider, "using_fallback", False),
            context_used=count_messages(
                self.conversation, runtime.system_prompt(), runtime.registry.schemas()
            ),
            context_window=provider.context_window,
            usage=runtime.session_usage.as_dict(),
            memories=self.memories.count(),
        )

    def fresh_config(self) -> WyckoffConfig:
        """The config as on disk, re-read when the file changed: a model added in another
        shell (`wyckoff model add`) can be listed and chosen without a restart."""
        from wyckoff.config import config_path, load_config

        path = config_path(self.home)
        stamp = path.stat().st_mtime_ns if path.exists() else 0
        if stamp != self._config_stamp:
            self.config, self._config_stamp = load_config(self.home), stamp
        return self.config

    def switch_model(self, model_id: str) -> None:
        """Answer with another configured model from the next call on."""
        from wyckoff.cli.providers.factory import build_provider

        self.runtime.switch_provider(build_provider(self.fresh_config(), model_id))

    def chart(self, code: str, days: int) -> dict[str, Any]:
        """The K-line chart's data for one stock; raises ToolFailure with a sentence."""
        from wyckoff.agents.stocks import kline_data

        return kline_data(self.runtime.context, code, days=days)

    def intraday_chart(self, code: str) -> dict[str, Any]:
        """The minute path of one stock today (or its latest trading day), with VWAP and its
        support; raises a WyckoffError with a sentence."""
        from wyckoff.agents.intraday import intraday_chart_data

        return intraday_chart_data(self.runtime.context, code)

    def tool_title(self, name: str) -> str:
        return self.runtime.registry.title(name)

    def tool_summary(self, name: str, value: Any) -> str | None:
        """The tool's one line for people about a result it returned."""
        return self.runtime.registry.summarize(name, value)

    # --- memory ---------------------------------------------------------------------------

    def model_caller(self, purpose: str) -> Callable[[str, str], str]:
        """(system prompt, text) -> reply text: plain calls on the current provider for
        memory work, counted in `model usage` under `purpose`."""
        session_id = self.conversation.session_id

        def ask(system_prompt: str, text: str) -> str:
            return self.runtime.plain_call(system_prompt, text, purpose, session_id)

        return ask

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
            self.memories,
            head,
            self.model_caller("extraction"),
            session_id=self.conversation.session_id,
        )


def open_agent(
    *,
    model_id: str | None = None,
    session_id: str | None = None,
    continue_latest: bool = False,
    max_rounds: int = MAX_TOOL_ROUNDS,
    approve: list[str] | None = None,
    approve_all: bool = False,
    interactive: bool = False,
    use_memory: bool = True,
) -> Agent:
    """The agent for this WYCKOFF_HOME. `interactive`: risky calls and ask_user questions
    wait for the front end's answer (see `updates()`); otherwise they are refused/skipped.
    `use_memory` False: no recall, and no memory written before a compaction."""
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.providers.factory import build_provider
    from wyckoff.cli.skills import SkillLibrary
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.engine.clock import market_now
    from wyckoff.mcp.client import attach_mcp_servers
    from wyckoff.memory.store import MemoryStore
    from wyckoff.store import Store

    market_now()  # a malformed WYCKOFF_NOW is a usage error now, not in every turn
    home = wyckoff_home()
    config = load_config(home)
    provider = build_provider(config, model_id)
    store = Store.in_home(home)
    chat_log = ChatLog(store)
    choice: SessionChoice = "resume" if session_id else "latest" if continue_latest else "new"
    conversation = open_conversation(chat_log, choice, session_id)
    registry = default_registry()
    mcp_warnings = attach_mcp_servers(registry, home)
    unknown = sorted(set(approve or []) - set(registry.names))
    if unknown:
        raise UsageError(
            f"--approve 里有未知的工具：{', '.join(unknown)}。可用工具：{', '.join(registry.names)}。"
        )
    return Agent(
        home=home,
        config=config,
        provider=provider,
        registry=registry,
        store=store,
        chat_log=chat_log,
        conversation=conversation,
        skills=SkillLibrary(home),
        mcp_warnings=mcp_warnings,
        memories=MemoryStore(store),
        max_rounds=max_rounds,
        approve=approve,
        approve_all=approve_all,
        interactive=interactive,
        use_memory=use_memory,
    )


def open_conversation(
    chat_log: ChatLog, choice: SessionChoice, session_id: str | None = None
) -> Conversation:
    """A new session, a saved one, a copy of `session_id` (fork) or the latest one."""
    if choice == "new":
        return Conversation.start(chat_log)
    if choice == "latest":
        session_id = chat_log.latest_session()
        if session_id is None:
            raise UsageError("还没有可继续的会话：去掉 --continue 开始新会话。")
    elif choice == "fork":
        assert session_id is not None
        session_id = chat_log.fork(session_id)
    assert session_id is not None
    return Conversation.resume(chat_log, session_id)
