"""AgentRuntime: the one loop every front end consumes as a stream of RuntimeEvent dicts.

model call -> stream chunks -> tool calls -> batches (parallel when safe) -> observations
-> next round, up to MAX_TOOL_ROUNDS. Before answering, the loop guard checks that tools
the question requires were called; repeated calls are stopped by the doom-loop detector.
Nothing here prints or touches a widget: front ends read the events.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.events import (
    Compaction,
    DoneStatus,
    RuntimeEvent,
    Usage,
    UsageTotals,
    usage_event,
)
from wyckoff.cli.loop_guard import (
    MAX_INCOMPLETE_TOOL_RETRIES,
    Expectation,
    resolve_turn_expectation,
)
from wyckoff.cli.messages import AssistantMessage, History, Message, ToolCall, kind_of
from wyckoff.cli.output import local_today
from wyckoff.cli.providers.base import (
    LLMProvider,
    ProviderError,
    StreamAccumulator,
    StreamCancelled,
    TextDelta,
    ThinkingDelta,
    usage_of,
)
from wyckoff.cli.runtime.approval import ApprovalPolicy, ConfirmCallback
from wyckoff.cli.runtime.batch import ToolBatchRunner, tool_message
from wyckoff.cli.runtime.turn import TurnCancelled, TurnState
from wyckoff.cli.tokens import MessageTokenCache
from wyckoff.cli.tools import Skills, ToolContext, ToolRegistry
from wyckoff.cli.traces import TurnTrace
from wyckoff.config import StreamRedactor, redact_text, redact_value
from wyckoff.token_usage import TokenUsage
from wyckoff.untrusted import PROMPT_RULE

if TYPE_CHECKING:
    from wyckoff.store import Store

MAX_TOOL_ROUNDS = 15

SYSTEM_PROMPT = """你是 Wyckoff，一名严谨的 A 股研究助手，用威科夫方法（Wyckoff method）分析市场、个股和用户持仓。

工作规则：
- 用用户使用的语言回答（默认简体中文），结论先行，给出依据。
- 所有价格、涨跌幅、成交量、指标和信号都必须来自工具结果；没有数据就调用工具获取，绝不编造价格或数字。
- 工具结果带有 source 与 as_of：如果 source 是 demo（合成演示数据）或数据日期已过时，必须在回答里明确说明。
- 工具结果带有 bar_note 时，as_of 当天的日线尚未收盘（盘中数据），回答里必须说明这不是收盘结论。
- 信号的历史记录：工具结果里的 signal_records / record 是该信号在本地行情库历史上的表现。提到信号时引用它的 text；记录的 evidence 不是 edge（超额不为正或 |t|<2）、或没有数字（演示数据、未研究、历史太短）时，绝不把这个信号说成优势或买入理由，要说明记录不支持。
- 涉及用户持仓与交易的改动（如 update_portfolio）必须经用户批准；你只提出建议和理由。
{untrusted_rule}
- 以 [SYSTEM NOTIFICATION - NOT USER INPUT] 开头的消息是系统通知（如后台任务完成），不是用户说的话。
- 回测结果里的 strategy_record 是默认策略在真实行情上的记录（没有跑赢指数）：谈到策略、回测或选股的收益时
  必须转述它，不要把回测收益或信号说成已被证明的优势。
- 投资有风险：给出风险点和失效条件，不做收益承诺。

今天是 {today}。"""

DeltaKind = Literal["text_delta", "thinking_delta"]
# redacted piece by piece as they stream
STREAMED_EVENTS: tuple[DeltaKind, ...] = ("text_delta", "thinking_delta")


class AgentRuntime:
    def __init__(
        self,
        provider: LLMProvider,
        registry: ToolRegistry,
        *,
        home: Path,
        store: Store | None = None,
        session_id: str | None = None,
        confirm: ConfirmCallback | None = None,
        ask_user: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        approve: tuple[str, ...] | list[str] = (),
        approve_all: bool = False,
        background: BackgroundTaskManager | None = None,
        max_rounds: int = MAX_TOOL_ROUNDS,
        skills: Skills | None = None,
        skills_reminder: Callable[[], str] | None = None,
        memory_recall: Callable[[str], str] | None = None,
        memory_flush: Callable[[list[Message]], None] | None = None,
        record_traces: bool = True,
        instructions: str | None = None,
        parent: AgentRuntime | None = None,
        today: Callable[[], date] = local_today,
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.home = home
        self.store = store
        self.session_id = session_id
        self.background = background
        self.max_rounds = max_rounds
        self.skills_reminder = skills_reminder
        self.memory_recall = memory_recall
        self.memory_flush = memory_flush
        self.record_traces = record_traces
        self.instructions = instructions  # a sub-agent's own system prompt
        self.parent = parent
        self.today = today  # the date the prompt gives the model (tests pin it)
        self._open_days: frozenset[date] | None = None
        self.session_usage = self._recorded_usage(session_id)
        self.token_cache = MessageTokenCache()
        self.context = ToolContext(
            home=home,
            registry=registry,
            provider=provider,
            store=store,
            skills=skills,
            ask_user=ask_user,
            background=background,
        )
        if parent is not None:  # what a sub-agent reads guards its parent's sends, and back
            self.context.egress = parent.context.egress
        # a sub-agent's risky calls are approved by its parent
        self.approvals: ApprovalPolicy = (
            parent.approvals
            if parent is not None
            else ApprovalPolicy(
                registry, self.context, confirm=confirm, approve=approve, approve_all=approve_all
            )
        )
        self._cancel = threading.Event()
        self.tools = ToolBatchRunner(
            registry, self.context, self.approvals, background, self._cancel
        )
        self.last_trace: TurnTrace | None = None

    # --- public -------------------------------------------------------------------------

    def switch_provider(self, provider: LLMProvider) -> None:
        """Answer with `provider` from the next model call on (tools that call a model too)."""
        self.provider = provider
        self.context.provider = provider

    def new_session(self, session_id: str) -> None:
        """Work on another session (new, resumed or forked): its usage goes on from what it
        recorded (zero when new), and no "always allow" answer or unused consent carries over."""
        self.session_id = session_id
        self.session_usage = self._recorded_usage(session_id)
        self.approvals.reset()

    def _turn_config(self) -> Any:
        """The config the turn's tools read: once per turn (a sub-agent's turn uses its
        parent's); None when the file is broken, so each tool reports that as before."""
        from wyckoff.config import load_config
        from wyckoff.errors import WyckoffError

        if self.parent is not None:
            return self.parent.context.config
        try:
            return load_config(self.home)
        except WyckoffError:
            return None

    def _recorded_usage(self, session_id: str | None) -> UsageTotals:
        """What the session's model calls used so far: a resumed session goes on from it."""
        totals = UsageTotals()
        if self.store is not None and session_id is not None:
            from wyckoff.usage_store import session_usage

            recorded = session_usage(self.store, session_id)  # counts as one usage event
            totals.add(usage_event(recorded, recorded["cost"]))
        return totals

    def on_task_update(self, listener: Callable[[RuntimeEvent], None]) -> None:
        """Call `listener` with every background task's `task_update` event, known keys cut
        out like every other event; without a task manager there are none."""
        if self.background is not None:
            self.background.on_update(lambda event: listener(redact_value(event)))

    def cancel(self) -> None:
        """Stop the running turn: the stream is abandoned, running tools are told to stop."""
        self._cancel.set()
        self.tools.cancel_calls()

    def record_front_end_error(self, message: str, details: str) -> None:
        """A front end's own failure (a display bug) goes into the latest turn's trace."""
        trace = self.last_trace or self._new_trace(self.session_id)
        if trace is not None:
            trace.record("front_end_error", message=message, traceback=details)

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def child(self, registry: ToolRegistry, *, instructions: str, max_rounds: int) -> AgentRuntime:
        """The same loop for a sub-agent: this provider, store, session, background tasks and
        approval path; its own instructions, tool view and round limit."""
        return AgentRuntime(
            self.provider,
            registry,
            home=self.home,
            store=self.store,
            session_id=self.context.session_id or self.session_id,
            background=self.background,
            max_rounds=max_rounds,
            record_traces=self.record_traces,
            instructions=instructions,
            parent=self,
        )

    def system_prompt(self) -> str:
        if self.instructions is not None:
            return self.instructions
        prompt = SYSTEM_PROMPT.format(today=self.today().isoformat(), untrusted_rule=PROMPT_RULE)
        prompt += f"\n{self._market_clock()}"
        if self.skills_reminder is not None:
            reminder = self.skills_reminder()
            if reminder:
                prompt += f"\n\n<system-reminder>\n{reminder}\n</system-reminder>"
        return prompt

    def _market_clock(self) -> str:
        """The market's phase now, with the stored calendar's holidays (read once per runtime)."""
        from wyckoff.agents.market_data import stored_open_days
        from wyckoff.engine.clock import market_now, prompt_note

        if self._open_days is None:
            self._open_days = stored_open_days(self.home, self.context.config)
        return prompt_note(market_now(), self._open_days)

    def run_stream(
        self, messages: History, *, wait_for_background: bool = False
    ) -> Iterator[RuntimeEvent]:
        """Run one user turn over `messages` (appended to in place); yields RuntimeEvents,
        with every known key cut out. Consents not used by the end of the turn expire."""
        try:
            for event in self._turn(messages, wait_for_background):
                yield event if event["type"] in STREAMED_EVENTS else redact_value(event)
        finally:
            self.context.consents.clear()

    def _turn(self, messages: History, wait_for_background: bool) -> Iterator[RuntimeEvent]:
        self._cancel.clear()
        session_id: str | None = getattr(messages, "session_id", None) or self.session_id
        self.context.session_id = session_id
        self.context.config = self._turn_config()
        self.context.egress.note_history(
            (m.get("name", "") for m in messages if m["role"] == "tool"), self.registry.get
        )
        turn = TurnState(session_id, self._new_trace(session_id), self.session_usage)
        self.last_trace = turn.trace
        turn.record(
            "init",
            session_id=session_id,
            user_input=_last_user_text(messages),
            model=self.provider.name,
        )
        status: DoneStatus = "completed"
        error: str | None = None
        try:
            while True:
                status = yield from self._rounds(messages, turn)
                if status != "completed" or not wait_for_background:
                    break
                if not (yield from self._continue_with_notifications(messages, turn)):
                    break
        except (TurnCancelled, StreamCancelled):
            status = "cancelled"
        except ProviderError as exc:
            status, error = "error", exc.message
        except Exception as exc:  # never let a bug end the front end; the trace keeps details
            status = "error"
            error = f"内部错误：{type(exc).__name__}: {exc}"
            turn.record("error", message=error, traceback=traceback.format_exc())
        if error:
            turn.record("error", message=error)
        elapsed = time.monotonic() - turn.started
        usage = turn.usage.as_dict()
        turn.record(
            "final", status=status, text=turn.text, usage=usage, elapsed_s=round(elapsed, 3)
        )
        yield {
            "type": "done",
            "text": turn.text,
            "status": status,
            "error": error,
            "usage": usage,
            "elapsed_s": round(elapsed, 3),
            "session_id": session_id,
        }

    # --- the loop -----------------------------------------------------------------------

    def _rounds(
        self, messages: History, turn: TurnState
    ) -> Generator[RuntimeEvent, None, DoneStatus]:
        """Model/tool rounds until an answer; returns the status."""
        expectation = resolve_turn_expectation(messages)
        if expectation is not None and expectation.tool not in self.registry:
            expectation = None
        retries = 0
        memory_block = self._memory_block(messages)
        tool_rounds = 0
        round_number = 0
        while True:
            round_number += 1
            yield from self._maybe_compact(messages, turn)
            # Out of retries, the answer waits for the round's end: if the required tool is
            # still missing, the warning goes before it (as the design says), not after.
            hold_text = (
                unmet(expectation, turn) is not None and retries >= MAX_INCOMPLETE_TOOL_RETRIES
            )
            message = yield from self._model_round(
                messages, turn, round_number, memory_block, hold_text
            )
            calls = message.get("tool_calls") or []
            missed = unmet(expectation, turn)
            if not calls and missed is not None:
                if retries < MAX_INCOMPLETE_TOOL_RETRIES:
                    retries += 1
                    messages.append(message)
                    messages.append(missed.retry_message())
                    yield {"type": "retry", "reason": missed.reason, "attempt": retries}
                    continue
                turn.text = missed.warning() + turn.text
                message["content"] = missed.warning() + message["content"]
            if hold_text and message["content"]:
                yield {"type": "text_delta", "text": message["content"]}
            if not calls:
                messages.append(message)
                return "completed"
            messages.append(message)
            if tool_rounds >= self.max_rounds:
                self._refuse_calls(
                    messages, calls, f"已达到单轮最多 {self.max_rounds} 次工具往返的上限，未执行。"
                )
                notice = f"\n\n（已达到 {self.max_rounds} 轮工具调用上限，回答可能不完整。）"
                turn.text += notice
                yield {"type": "text_delta", "text": notice}
                return "max_rounds"
            tool_rounds += 1
            yield from self.tools.execute(messages, calls, turn)

    def _model_round(
        self,
        messages: History,
        turn: TurnState,
        round_number: int,
        memory_block: str,
        hold_text: bool = False,
    ) -> Generator[RuntimeEvent, None, AssistantMessage]:
        """One model call; returns the assistant message (appended by the caller). With
        `hold_text` its answer text is not streamed (the caller yields it)."""
        active = self.provider.active
        yield {
            "type": "model_start",
            "round": round_number,
            "provider": active.provider,
            "model": active.model,
        }
        started = time.monotonic()
        reply = StreamAccumulator()
        try:
            yield from self._relay_stream(messages, memory_block, reply, turn, hold_text)
        except StreamCancelled:
            self._keep_partial_answer(messages, reply, turn)
            raise
        message = self._assistant_message(reply, turn, round_number, started)
        if reply.thinking:  # the round's whole reasoning, redacted as a whole
            yield {"type": "thinking", "round": round_number, "text": reply.thinking}
        return message

    def _relay_stream(
        self,
        messages: History,
        memory_block: str,
        reply: StreamAccumulator,
        turn: TurnState,
        hold_text: bool,
    ) -> Iterator[RuntimeEvent]:
        """Pass the provider's chunks on as events (answer text not, with `hold_text`)
        while `reply` collects them."""
        shown = _ShownDeltas()
        stream = self.provider.chat_stream(
            self._wire_messages(messages, memory_block),
            self.registry.schemas(),
            self.system_prompt(),
            cancel_event=self._cancel,
        )
        for chunk in stream:
            reply.add(chunk)
            if chunk["type"] == "thinking_delta" or (
                chunk["type"] == "text_delta" and not hold_text
            ):
                yield from shown.feed(chunk)
            elif chunk["type"] == "usage":
                yield self._account(usage_of(chunk), turn)
            elif chunk["type"] == "provider_switch":
                shown = _ShownDeltas()  # the partial output before the switch is dropped
                yield chunk
            elif chunk["type"] == "tool_calls":
                yield chunk
        yield from shown.flush()

    def _keep_partial_answer(
        self, messages: History, reply: StreamAccumulator, turn: TurnState
    ) -> None:
        """A cancelled reply's text so far stays in the history (without tool calls)."""
        text = redact_text(reply.text)
        if text:
            messages.append(
                {
                    "role": "assistant",
                    "content": text,
                    "meta": {"model": self.provider.active.model},
                }
            )
        turn.text = text

    def _assistant_message(
        self, reply: StreamAccumulator, turn: TurnState, round_number: int, started: float
    ) -> AssistantMessage:
        reply.text, reply.thinking = redact_text(reply.text), redact_text(reply.thinking)
        if reply.thinking:
            turn.record("thinking", round=round_number, text=reply.thinking)
        active = self.provider.active
        message = reply.assistant_message(active)
        usage = reply.usage
        message["meta"] = {
            "model": active.model,
            "provider": active.provider,
            "input_tokens": usage["input_tokens"]
            + usage["cache_read_tokens"]
            + usage["cache_write_tokens"],
            "output_tokens": usage["output_tokens"],
            "elapsed_s": round(time.monotonic() - started, 3),
        }
        turn.text = reply.text
        return message

    def _account(self, usage: TokenUsage, turn: TurnState) -> Usage:
        purpose = "chat" if self.parent is None else "sub_agent"
        event = usage_event(usage, self._record(usage, purpose, turn.session_id))
        turn.add_usage(event)
        return event

    def _wire_messages(self, messages: History, memory_block: str) -> list[Message]:
        """What the provider sees: the turn's user message carries recalled memories."""
        if not memory_block:
            return list(messages)
        index = _last_user_index(messages)
        wire = list(messages)
        request = wire[index]
        if request["role"] == "user":  # always: a memory block is recalled for a user message
            original = request["content"]
            wire[index] = {
                **request,
                "content": f"{memory_block}\n<current-user-message>\n{original}\n</current-user-message>",
            }
        return wire

    def _memory_block(self, messages: History) -> str:
        if self.memory_recall is None:
            return ""
        index = _last_user_index(messages)
        return self.memory_recall(messages[index]["content"]) if index >= 0 else ""

    # --- compaction ---------------------------------------------------------------------

    def _maybe_compact(self, messages: History, turn: TurnState) -> Iterator[RuntimeEvent]:
        from wyckoff.cli.compaction import needs_compaction

        if needs_compaction(
            messages,
            self.provider.context_window,
            self.system_prompt(),
            self.registry.schemas(),
            self.token_cache,
        ):
            event = self.compact(messages, turn.session_id)
            turn.record("compaction", **(event or {"status": "skipped"}))
            if event:
                yield event

    def plain_call(
        self, system_prompt: str, text: str, purpose: str, session_id: str | None = None
    ) -> str:
        """One model call outside the conversation (compaction, memory), its usage recorded
        under `purpose`; returns the reply's text."""
        reply = self.provider.chat([{"role": "user", "content": text}], [], system_prompt)
        if reply["usage"]:
            self._record(reply["usage"], purpose, session_id)
        return reply["text"]

    def _record(self, usage: TokenUsage, purpose: str, session_id: str | None) -> float | None:
        """Price one call's usage and store it (when there is a store); returns the cost."""
        from wyckoff.cli.pricing import price
        from wyckoff.usage_store import record_usage

        config = self.provider.active.config
        cost = price(config, usage)
        if self.store is not None:
            record_usage(self.store, config, usage, cost, session_id, purpose)
        return cost

    def compact(self, messages: History, session_id: str | None = None) -> Compaction | None:
        """Compact now (also for /compact and `wyckoff session compact`); None if it gave up."""
        from wyckoff.cli.compaction import COMPACTION_PROMPT, compact

        known = session_id or getattr(messages, "session_id", None) or self.session_id
        session = known or "nosession"

        def summarize(text: str) -> str:
            return self.plain_call(COMPACTION_PROMPT, text, "compaction", known)

        result = compact(
            messages,
            window=self.provider.context_window,
            summarize=summarize,
            home=self.home,
            session_id=session,
            flush_memory=self.memory_flush,
        )
        if result is None:
            return None
        if hasattr(messages, "replace_all"):  # a Conversation: the chat log is rewritten first
            messages.replace_all(result.messages)
        else:
            assert isinstance(messages, list)  # every other History is a plain list
            messages[:] = result.messages
        return {
            "type": "compaction",
            "before": result.before,
            "after": result.after,
            "archive_ref": result.archive_ref,
        }

    def _refuse_calls(self, messages: History, calls: list[ToolCall], reason: str) -> None:
        for call in calls:
            messages.append(tool_message(call, f"工具错误：{reason}"))

    # --- background notifications (headless) ----------------------------------------------

    def _continue_with_notifications(
        self, messages: History, turn: TurnState
    ) -> Generator[RuntimeEvent, None, bool]:
        """Wait for this turn's background tasks; True when their notifications were added."""
        if self.background is None:
            return False
        running = [
            t.id for t in self.background.running(turn.session_id) if t.id in turn.started_tasks
        ]
        if running:
            yield {"type": "background_wait", "task_ids": running}
            if not self.background.wait(running, self._cancel):
                raise TurnCancelled()
        notifications = self.background.take_notifications(turn.session_id)
        for notification in notifications:
            messages.append(notification)
        return bool(notifications)

    # --- traces -------------------------------------------------------------------------

    def _new_trace(self, session_id: str | None) -> TurnTrace | None:
        return TurnTrace(self.home, session_id) if self.record_traces else None


class _ShownDeltas:
    """Text and thinking as shown while they stream: each redacted piece by piece."""

    def __init__(self) -> None:
        self.redactors: dict[DeltaKind, StreamRedactor] = {
            "text_delta": StreamRedactor(),
            "thinking_delta": StreamRedactor(),
        }

    def feed(self, chunk: TextDelta | ThinkingDelta) -> Iterator[RuntimeEvent]:
        yield from _delta(chunk["type"], self.redactors[chunk["type"]].feed(chunk["text"]))

    def flush(self) -> Iterator[RuntimeEvent]:
        kinds: tuple[DeltaKind, ...] = ("thinking_delta", "text_delta")
        for kind in kinds:
            yield from _delta(kind, self.redactors[kind].flush())


def _delta(kind: DeltaKind, text: str) -> Iterator[RuntimeEvent]:
    if not text:
        return
    if kind == "text_delta":
        yield {"type": "text_delta", "text": text}
    else:
        yield {"type": "thinking_delta", "text": text}


def unmet(expectation: Expectation | None, turn: TurnState) -> Expectation | None:
    """The turn's required tool, while the turn has not called it."""
    if expectation is None or expectation.satisfied_by(turn.calls):
        return None
    return expectation


def _last_user_index(messages: History) -> int:
    """The turn's request: the last user-role message that is not a retry prompt (a
    background notification starts a turn of its own)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and kind_of(message) != "tool_retry":
            return index
    return -1


def _last_user_text(messages: History) -> str:
    index = _last_user_index(messages)
    return str(messages[index].get("content", "")) if index >= 0 else ""
