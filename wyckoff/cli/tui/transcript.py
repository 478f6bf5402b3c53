"""The chat transcript: each RuntimeEvent type of a turn has one handler (`HANDLERS`) that
mounts or updates the answer, the thinking block, tool rows and notices; a sub-agent's
events go to its delegation block. A resumed session's history is drawn here too."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.cli.chat_log import INTERRUPTED_RESULT
from wyckoff.cli.messages import ToolCall, kind_of, shown_text, tool_calls_of
from wyckoff.cli.runtime.approval import DENIED
from wyckoff.cli.runtime.batch import background_summary
from wyckoff.cli.tools import saved_result
from wyckoff.cli.tui.delegation import DelegationView
from wyckoff.cli.tui.intraday import TailPanel
from wyckoff.cli.tui.widgets import (
    WAITING_FOR_MODEL,
    AssistantMessage,
    ThinkingBlock,
    ToolRow,
    UserMessage,
    error_outcome,
)
from wyckoff.cli.tui.wrap import WrappedMarkdown

if TYPE_CHECKING:
    from wyckoff.cli.agent import Agent
    from wyckoff.cli.tui.app import WyckoffApp


class Transcript:
    """What the current turn has put in the chat so far."""

    def __init__(self, app: WyckoffApp) -> None:
        self.app = app
        self.assistant: AssistantMessage | None = None
        self.thinking: ThinkingBlock | None = None
        self.rows: dict[str, ToolRow] = {}
        self.denied_calls: set[str] = set()  # their rows say "已拒绝"
        self.delegations = DelegationView(app, lambda: list(self.rows))

    def new_turn(self) -> None:
        self.assistant = self.thinking = None

    async def show(self, event: dict[str, Any]) -> None:
        if "agent" in event:
            await self.delegations.show(event)
            return
        kind = event["type"]
        if kind == "model_start":
            self.app.show_waiting(WAITING_FOR_MODEL)
        elif kind not in ("usage", "retry"):  # the model has answered (or the turn ended)
            self.app.end_waiting()
        if self.thinking is not None and kind not in ("thinking_delta", "usage"):
            self.thinking.settle()
        handler = HANDLERS.get(kind)
        if handler is not None:
            await handler(self, event)

    async def write_text(self, text: str) -> None:
        # Each fragment is appended and awaited before the next: Markdown.append computes what
        # to re-parse when called, so two appends in flight (as MarkdownStream.stop() can leave)
        # render a block twice. Deltas are already coalesced by the worker, so this is cheap.
        if self.assistant is None:
            self.assistant = AssistantMessage()
            await self.app.mount_chat(self.assistant)
        self.assistant.text += text
        await self.assistant.append(text)
        self.app.query_one("#chat").scroll_end(animate=False)

    async def end_text(self, discard: bool = False) -> None:
        if discard and self.assistant is not None:
            await self.assistant.remove()
        self.assistant = None

    # --- one handler per event type --------------------------------------------------------

    async def _text_delta(self, event: dict[str, Any]) -> None:
        await self.write_text(event["text"])

    def _thinking_block(self) -> ThinkingBlock:
        if self.thinking is None:
            self.thinking = ThinkingBlock()
            self.app.mount_chat(self.thinking)
        return self.thinking

    async def _thinking_delta(self, event: dict[str, Any]) -> None:
        self._thinking_block().add(event["text"])

    async def _thinking(self, event: dict[str, Any]) -> None:
        """The round's whole reasoning replaces the pieces streamed (or is the first sign
        of it, from a provider that does not stream thinking)."""
        self._thinking_block().show(event["text"])

    async def _model_start(self, event: dict[str, Any]) -> None:
        await self.end_text()
        self.thinking = None

    async def _tool_calls(self, event: dict[str, Any]) -> None:
        await self.end_text()

    async def _tool_start(self, event: dict[str, Any]) -> None:
        row = ToolRow(event["id"], event["name"], event["title"], event["args"])
        self.rows[event["id"]] = row
        self.app.mount_chat(row)

    async def _approved(self, event: dict[str, Any]) -> None:
        row = self.rows.get(event["id"])
        if row is not None:
            row.show_args(event["args"])  # edited in the dialog: the row shows what runs

    async def _tool_finished(self, event: dict[str, Any]) -> None:
        row = self.rows.get(event["id"])
        if row is None:
            return
        if event["id"] in self.denied_calls:
            row.finish("已拒绝", event["elapsed_s"], failed=True)
        elif event["type"] == "tool_error":
            row.finish(error_outcome(event["error"]), event["elapsed_s"], failed=True)
        else:
            row.finish(
                event.get("summary") or "完成", event["elapsed_s"], chart_code=chart_code_of(event)
            )
            tail = tail_result_of(event)
            if tail is not None:
                self.app.mount_chat(TailPanel(tail))

    async def _retry(self, event: dict[str, Any]) -> None:
        self.app.show_notice(f"… {event['reason']}，要求模型补调工具（第 {event['attempt']} 次）")

    async def _provider_switch(self, event: dict[str, Any]) -> None:
        await self.end_text(discard=True)
        self.app.show_notice(f"⚠ 模型 {event['from']} 不可用，已切换到备用模型 {event['to']}")

    async def _compaction(self, event: dict[str, Any]) -> None:
        self.app.show_notice(
            f"上下文已压缩：{event['before']} 条 → {event['after']} 条（原文归档 {event['archive_ref']}）"
        )

    async def _usage(self, event: dict[str, Any]) -> None:
        self.app.refresh_status()

    async def _done(self, event: dict[str, Any]) -> None:
        await self.end_text()
        self.app.turn_done(event)

    # --- a resumed session -----------------------------------------------------------------

    def show_history(self, agent: Agent) -> None:
        """The agent's conversation so far (a resumed session), each tool call a finished row."""
        messages = list(agent.conversation)
        observations = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in messages
            if m["role"] == "tool"
        }
        for message in messages:
            role, content = message["role"], str(message.get("content") or "")
            if role == "user" and kind_of(message) != "notification":
                self.app.mount_chat(UserMessage(shown_text(message)))
            elif role == "assistant" and content:
                self.app.mount_chat(WrappedMarkdown(content, classes="assistant-message"))
            for call in tool_calls_of(message):
                row = ToolRow(
                    call["id"],
                    call["name"],
                    agent.tool_title(call["name"]),
                    call.get("args") or {},
                )
                self.app.mount_chat(row)
                outcome, failed = self._history_outcome(
                    agent, call, observations.get(call["id"], "")
                )
                row.finish(outcome, 0.0, failed=failed)

    def _history_outcome(self, agent: Agent, call: ToolCall, observation: str) -> tuple[str, bool]:
        """A resumed call's row: the tool's summary of what it returned, or that it failed
        (not the error text, which was written for the model)."""
        if observation.startswith(f"工具错误：{DENIED}"):
            return "已拒绝（历史）", True
        if observation.startswith("工具错误："):
            return "未成功（历史）", True
        if observation == INTERRUPTED_RESULT:  # the program stopped before the call finished
            return "被中断（历史）", True
        # the JSON object the tool returned (inside a data marker, or whole in its saved file)
        observation = saved_result(agent.home, observation) or observation
        start, end = observation.find("{"), observation.rfind("}")
        try:
            value = json.loads(observation[start : end + 1]) if start >= 0 else None
        except json.JSONDecodeError:  # plain text
            value = None
        started = background_summary(value) if isinstance(value, dict) else None
        summary = started or agent.tool_summary(call["name"], value)
        return f"{summary or '完成'}（历史）", False


HANDLERS: dict[str, Callable[[Transcript, dict[str, Any]], Awaitable[None]]] = {
    "text_delta": Transcript._text_delta,
    "thinking_delta": Transcript._thinking_delta,
    "thinking": Transcript._thinking,
    "model_start": Transcript._model_start,
    "tool_calls": Transcript._tool_calls,
    "tool_start": Transcript._tool_start,
    "approved": Transcript._approved,
    "tool_result": Transcript._tool_finished,
    "tool_error": Transcript._tool_finished,
    "retry": Transcript._retry,
    "provider_switch": Transcript._provider_switch,
    "compaction": Transcript._compaction,
    "usage": Transcript._usage,
    "done": Transcript._done,
}


def chart_code_of(event: dict[str, Any]) -> str | None:
    """The stock a finished analyze_stock call was about, for its K-line hint."""
    result = _result_of(event, "analyze_stock")
    code = result.get("code") if isinstance(result, dict) else None
    return code if isinstance(code, str) else None


def tail_result_of(event: dict[str, Any]) -> dict[str, Any] | None:
    """A finished tail_check's result, for its panel (None when it is not one, or was cut)."""
    result = _result_of(event, "tail_check")
    return result if isinstance(result, dict) and "results" in result else None


def _result_of(event: dict[str, Any], tool: str) -> Any:
    """The parsed result of a finished call of `tool` (None for another tool or bad JSON)."""
    if event["name"] != tool:
        return None
    try:
        return json.loads(whole_result(event))
    except (OSError, json.JSONDecodeError):
        return None


def whole_result(event: dict[str, Any]) -> str:
    """A result's full text: one too long for the model is cut inline and saved whole."""
    ref = event.get("ref")
    return Path(ref).read_text(encoding="utf-8") if ref else event["result"]
