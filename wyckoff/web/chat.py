"""The chat room: one interactive Agent (the door the TUI uses) shared by the open pages.

A turn runs on a worker thread; every RuntimeEvent it yields, and every update from
`Agent.updates()` (background tasks, approval requests, questions), is published to the
pages' event streams as JSON. A page that connects first gets a snapshot (the session's
messages, the running turn's events so far, what waits for an answer), taken under the same
lock as publishing, so it misses nothing and sees nothing twice.

Approvals stay the runtime's: the page only answers the Future the runtime waits on, with
the same three choices as the TUI dialog; leaving (close) answers deny."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from wyckoff.errors import UsageError
from wyckoff.web.markdown_html import markdown_html

if TYPE_CHECKING:
    from wyckoff.cli.agent import Agent, AgentUpdate

Subscriber = Callable[[str], None]
DECISIONS = ("allow", "always", "deny")
SESSIONS_SHOWN = 30


class ChatRoom:
    def __init__(self) -> None:
        self.agent: Agent | None = None
        self.agent_error = ""
        self.lock = threading.RLock()
        self.subscribers: set[Subscriber] = set()
        self.turn_events: list[str] = []  # the running turn's payloads, for late pages
        self.turn_base = 0  # messages before the running turn
        self.running = False
        self.waiting: dict[str, tuple[Future, dict[str, Any]]] = {}  # approvals, questions
        self.notifications_pending = False
        self.seq = 0

    # --- the agent -----------------------------------------------------------------------

    def open(self) -> Agent | None:
        """The agent, opened on first use (provider SDKs load in about a second); None with
        `agent_error` set when no model is configured or the config is broken."""
        from wyckoff.cli.agent import open_agent
        from wyckoff.errors import WyckoffError

        with self.lock:
            if self.agent is None:  # tried again each time: a model added since then counts
                try:
                    self.agent = open_agent(interactive=True)
                except WyckoffError as exc:
                    self.agent_error = exc.message
                    return None
                self.agent_error = ""
                threading.Thread(target=self._relay_updates, daemon=True).start()
            return self.agent

    def require(self) -> Agent:
        agent = self.open()
        if agent is None:
            raise UsageError(self.agent_error)
        return agent

    def close(self) -> None:
        with self.lock:
            agent, self.agent = self.agent, None
        if agent is not None:
            agent.close()  # what still waits is answered deny / skipped

    # --- publishing ----------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Subscriber:
        """Register a page: it gets the snapshot first, then every event."""
        self.open()
        with self.lock:
            subscriber(self._payload(self.snapshot()))
            self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self.lock:
            self.subscribers.discard(subscriber)

    def publish(self, event: dict[str, Any]) -> None:
        with self.lock:
            payload = self._payload(event)
            if self.running:
                self.turn_events.append(payload)
            for subscriber in list(self.subscribers):
                subscriber(payload)

    def _payload(self, event: dict[str, Any]) -> str:
        self.seq += 1
        return json.dumps({**event, "seq": self.seq}, ensure_ascii=False, default=str)

    def snapshot(self) -> dict[str, Any]:
        agent = self.agent
        if agent is None:
            return {"type": "snapshot", "error": self.agent_error, "messages": [], "sessions": []}
        messages = list(agent.conversation)
        return {
            "type": "snapshot",
            "error": "",
            "session_id": agent.conversation.session_id,
            "model": agent.config.default or "",
            "messages": _history(agent, messages[: self.turn_base] if self.running else messages),
            "running": self.running,
            "turn": [json.loads(p) for p in self.turn_events],
            "waiting": [request for _, request in self.waiting.values()],
            "sessions": self.sessions(),
        }

    def sessions(self) -> list[dict[str, Any]]:
        """Saved sessions worth resuming, newest first."""
        agent = self.agent
        return agent.chat_log.list_sessions(SESSIONS_SHOWN) if agent is not None else []

    # --- turns ---------------------------------------------------------------------------

    def send(self, text: str) -> None:
        agent = self.require()
        text = text.strip()
        if not text:
            raise UsageError("问题是空的：请输入要问的内容。")
        with self.lock:
            if self.running:
                raise UsageError("上一个回答还在进行中：等它结束，或先点“取消”。")
            message = agent.skills.user_message(text)
            self.turn_base = len(agent.conversation)
            agent.conversation.append(message)
            self._start_turn({"type": "user_message", "text": text})

    def _start_turn(self, first: dict[str, Any]) -> None:
        self.running, self.turn_events = True, []
        self.publish(first)
        threading.Thread(target=self._run_turn, daemon=True).start()

    def _run_turn(self) -> None:
        agent = self.require()
        segment = ""  # the answer text since the last tool row, shown as HTML once whole
        try:
            for event in agent.run_turn():
                main = "agent" not in event  # not a sub-agent's
                if main and event["type"] == "done":
                    self._finish(dict(event), segment)
                    return
                if main and event["type"] == "text_delta":
                    segment += event["text"]
                elif main and segment and event["type"] != "usage":
                    self.publish({"type": "answer_html", "html": markdown_html(segment)})
                    segment = ""
                self.publish(dict(event))
        except Exception as exc:  # the runtime reports its own errors; a last guard
            error = {"type": "done", "status": "error", "error": f"内部错误：{exc}"}
            self._finish(error, segment)

    def _finish(self, done: dict[str, Any], segment: str) -> None:
        """The last answer, `done` and the end of the turn at once: a page that sees the
        answer can send the next question."""
        with self.lock:
            if segment:
                self.publish({"type": "answer_html", "html": markdown_html(segment)})
            self.publish(done)
            self.running, self.turn_events = False, []
            if self.notifications_pending:
                self._continue_with_notifications()

    def cancel(self) -> None:
        agent = self.require()
        agent.cancel()
        for request_id in list(self.waiting):
            self.answer(request_id, "deny")

    # --- out-of-turn updates -------------------------------------------------------------

    def _relay_updates(self) -> None:
        agent = self.agent
        if agent is None:
            return
        for update in agent.updates():
            self._on_update(update)

    def _on_update(self, update: AgentUpdate) -> None:
        if update["type"] == "approval_request":
            request = update["request"]
            shown = {k: request.get(k) for k in ("id", "name", "args", "title", "description")}
            shown["always_label"] = request.get("always_label") or "本会话总是允许"
            self._wait(update["answer"], {"type": "approval_request", **shown})
        elif update["type"] == "question":
            # its own id: the model chooses tool-call ids, so one could copy an approval's
            shown = {
                "type": "question",
                **update["question"],
                "id": f"question-{secrets.token_hex(6)}",
            }
            self._wait(update["answer"], shown)
        else:
            self.publish(dict(update))
            if update["type"] == "task_update" and update.get("status") != "running":
                with self.lock:
                    self.notifications_pending = True
                    if not self.running:
                        self._continue_with_notifications()

    def _wait(self, future: Future, shown: dict[str, Any]) -> None:
        with self.lock:
            self.waiting[shown["id"]] = (future, shown)
            self.publish(shown)

    def answer(self, request_id: str, decision: str, text: str = "") -> None:
        """The user's answer to an approval (allow / always / deny) or a question (answer /
        skip)."""
        from wyckoff.cli.runtime import Approval

        with self.lock:
            entry = self.waiting.get(request_id)
            if entry is None:
                raise UsageError("这个请求已经回答过或已结束。")
            future, shown = entry
            if shown["type"] == "approval_request" and decision not in DECISIONS:
                raise UsageError(
                    "批准只能是：allow（允许一次）、always（总是允许）、deny（拒绝）。"
                )
            del self.waiting[request_id]  # a wrong answer leaves the request waiting
            if shown["type"] == "approval_request":
                future.set_result(Approval(decision))  # type: ignore[arg-type]
            else:
                skipped = decision == "skip"
                future.set_result(
                    {
                        "status": "skipped" if skipped else "answered",
                        "answer": "" if skipped else text,
                    }
                )
            self.publish({"type": "answered", "id": request_id, "decision": decision})

    def _continue_with_notifications(self) -> None:
        """A finished background task starts a turn on its own, as in the TUI."""
        agent = self.agent
        self.notifications_pending = False
        if agent is None:
            return
        base = len(agent.conversation)
        if agent.take_notifications():
            self.turn_base = base
            self._start_turn({"type": "notice", "text": "后台任务已完成，继续分析……"})

    # --- sessions ------------------------------------------------------------------------

    def switch(self, choice: str, session_id: str | None) -> str:
        agent = self.require()
        if choice not in ("new", "resume", "fork"):
            raise UsageError("会话操作只能是 new（新对话）、resume（恢复）或 fork（分叉）。")
        if choice == "resume" and not session_id:
            raise UsageError("恢复会话需要会话 id。")
        with self.lock:
            if self.running:
                raise UsageError("请先等当前回答结束（或取消）再切换会话。")
            new_id = agent.switch_session(choice, session_id)  # type: ignore[arg-type]
            self.publish(self.snapshot())
        return new_id


def _history(agent: Agent, messages: list[Any]) -> list[dict[str, Any]]:
    """Saved messages as the page shows them: the user's words, answers and tool rows."""
    from wyckoff.cli.messages import kind_of, shown_text, tool_calls_of

    shown: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], str(message.get("content") or "")
        if role == "user" and kind_of(message) is None:
            shown.append({"role": "user", "text": shown_text(message)})
        elif role == "assistant" and content:
            shown.append({"role": "assistant", "html": markdown_html(content)})
        for call in tool_calls_of(message):
            shown.append(
                {"role": "tool", "name": call["name"], "title": agent.tool_title(call["name"])}
            )
    return shown
