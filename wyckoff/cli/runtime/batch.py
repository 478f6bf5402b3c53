"""One batch of tool calls from a model reply: each call announced, admitted (not after a
cancel or a repeated call, only when valid and approved), run (consecutive concurrency-safe
calls in parallel, background tools handed to the task manager) and reported in call order.
A sub-agent's events reach the turn's stream while its delegate call runs."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.events import Approved, ApprovedBy, RuntimeEvent
from wyckoff.cli.messages import History, ToolCall, ToolMessage
from wyckoff.cli.runtime.approval import ApprovalPolicy
from wyckoff.cli.runtime.turn import TurnCancelled, TurnState
from wyckoff.cli.tools import CancelEvent, ToolContext, ToolOutcome, ToolRegistry, ToolSpec

MAX_PARALLEL_TOOLS = 5

Admitted = tuple[ToolSpec, Any, ApprovedBy | None]
Runnable = tuple[ToolCall, ToolSpec, Any]


@dataclass
class BatchState:
    """One batch of tool calls: the outcomes so far, and why the rest do not run (a cancel
    or a repeated call stops the batch)."""

    outcomes: dict[str, ToolOutcome] = field(default_factory=dict)
    stopped: str | None = None


class ToolBatchRunner:
    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext,
        approvals: ApprovalPolicy,
        background: BackgroundTaskManager | None,
        cancel: threading.Event,
    ) -> None:
        self.registry = registry
        self.context = context
        self.approvals = approvals
        self.background = background
        self.cancel = cancel  # the turn's; set by AgentRuntime.cancel
        self._call_cancels: set[CancelEvent] = set()

    def cancel_calls(self) -> None:
        """Tell every running tool to stop."""
        for event in list(self._call_cancels):
            event.set()

    def execute(
        self, messages: History, calls: list[ToolCall], turn: TurnState
    ) -> Iterator[RuntimeEvent]:
        """Run one batch: consecutive safe calls in parallel, others one by one, in order."""
        batch = BatchState()
        for group in partition(calls, self.registry):
            runnable = yield from self._admit_group(messages, group, turn, batch)
            for call, outcome in (yield from self._run_group(runnable, turn)):
                batch.outcomes[call["id"]] = outcome
            yield from self._report_group(messages, group, batch, turn)
        if self.cancel.is_set():
            raise TurnCancelled()

    def _admit_group(
        self, messages: History, group: list[ToolCall], turn: TurnState, batch: BatchState
    ) -> Generator[RuntimeEvent, None, list[Runnable]]:
        """Announce each call of the group; returns those that may run (the others already
        have their outcome in `batch`)."""
        runnable: list[Runnable] = []
        for call in group:
            yield {
                "type": "tool_start",
                "id": call["id"],
                "name": call["name"],
                "args": call.get("args") or {},
                "title": self.registry.title(call["name"]),
            }
            admitted = self._admit(call, turn, batch)
            if isinstance(admitted, ToolOutcome):
                batch.outcomes[call["id"]] = admitted
                continue
            spec, params, approved_by = admitted
            if approved_by == "edit":  # the saved history says what ran, as the model sees
                calls_edited = getattr(messages, "calls_edited", None)  # a Conversation's
                if calls_edited is not None:
                    calls_edited()
            if approved_by is not None:
                yield self._approved_event(call, approved_by)
            runnable.append((call, spec, params))
        return runnable

    def _admit(self, call: ToolCall, turn: TurnState, batch: BatchState) -> Admitted | ToolOutcome:
        """Whether a call runs: not after a cancel or a repeated call in this batch, and
        only when valid and approved."""
        if batch.stopped is None and self.cancel.is_set():
            batch.stopped = "已被用户取消。"
        if batch.stopped is not None:
            return ToolOutcome(call["id"], call["name"], error=batch.stopped)
        turn.calls.append(call)
        loop_error = turn.doom.check(call["name"], call.get("args") or {})
        if loop_error:
            batch.stopped = "因检测到重复调用，本批次剩余的工具调用已取消。"
            return ToolOutcome(call["id"], call["name"], error=loop_error)
        return self._prepare(call)

    def _report_group(
        self, messages: History, group: list[ToolCall], batch: BatchState, turn: TurnState
    ) -> Iterator[RuntimeEvent]:
        """Each call's outcome in call order: traced, added to the history, announced."""
        for call in group:
            outcome = batch.outcomes[call["id"]]
            if turn.trace is not None:
                turn.trace.tool_result(
                    call["name"], call.get("args") or {}, outcome, "ok" if outcome.ok else "error"
                )
            messages.append(tool_message(call, outcome.observation()))
            if outcome.ok:
                self.context.egress.note_read(self.registry.get(call["name"]))
            yield outcome.event()

    def _prepare(self, call: ToolCall) -> Admitted | ToolOutcome:
        """Validate and approve a call: its spec, arguments and how it was approved, or an
        error outcome when it must not run."""
        checked = self.registry.validate(call)
        if isinstance(checked, str):
            return ToolOutcome(call["id"], call["name"], error=checked)
        spec, params = checked
        refused = spec.refusal(params, self.context) if spec.refusal else None
        if refused:  # nobody is asked to approve a call that would fail
            return ToolOutcome(call["id"], call["name"], error=refused)
        host = self.context.egress.host_to_approve(spec, params)
        if not spec.requires_approval and host is None:
            return spec, params, None
        approved = self.approvals.approve(call, spec, host)
        if isinstance(approved, str):
            return ToolOutcome(call["id"], call["name"], error=approved)
        by, edited = approved
        if edited is not None:
            call["args"] = edited
            checked = self.registry.validate(call)
            if isinstance(checked, str):
                return ToolOutcome(call["id"], call["name"], error=checked)
            spec, params = checked
        return spec, params, by

    def _approved_event(self, call: ToolCall, by: ApprovedBy) -> Approved:
        """Announces a risky call about to run, as a sentence (headless prints it)."""
        args = call.get("args") or {}
        return {
            "type": "approved",
            "id": call["id"],
            "name": call["name"],
            "by": by,
            "description": self.registry.describe(call["name"], args, self.context),
            "args": args,
        }

    def _run_group(
        self, runnable: list[Runnable], turn: TurnState
    ) -> Generator[RuntimeEvent, None, list[tuple[ToolCall, ToolOutcome]]]:
        """Run the group's calls at once; yields what they report while they run (a
        sub-agent's tagged events) and returns the outcomes in call order."""
        reports: queue.Queue[RuntimeEvent | None] = queue.Queue()
        if len(runnable) == 1 and not runnable[0][1].reports_events:
            call, spec, params = runnable[0]
            return [(call, self._run_one(call, spec, params, turn, reports.put))]
        if not runnable:
            return []
        with ThreadPoolExecutor(
            max_workers=MAX_PARALLEL_TOOLS, thread_name_prefix="tool-batch"
        ) as pool:
            futures = [
                (call, pool.submit(self._run_one, call, spec, params, turn, reports.put))
                for call, spec, params in runnable
            ]
            for _, future in futures:
                future.add_done_callback(lambda _: reports.put(None))
            finished = 0
            while finished < len(futures):
                event = reports.get()
                if event is None:
                    finished += 1
                else:
                    yield _note_sub_agent_event(event, turn)
            return [(call, future.result()) for call, future in futures]

    def _run_one(
        self,
        call: ToolCall,
        spec: ToolSpec,
        params: Any,
        turn: TurnState,
        report: Callable[[RuntimeEvent], None],
    ) -> ToolOutcome:
        cancel = CancelEvent()
        if self.cancel.is_set():
            cancel.set()
        self._call_cancels.add(cancel)

        def on_event(event: dict[str, Any]) -> None:
            # a sub-agent's event with its tag: no TypedDict union spells the tag on every type
            report(cast(RuntimeEvent, {**event, "call_id": call["id"]}))

        context = self.context.for_call(cancel_event=cancel, on_event=on_event)
        try:
            if spec.background and self.background is not None:
                return self._start_in_background(call, spec, params, turn, context)
            return self.registry.run(spec, params, context, call["id"])
        finally:
            self._call_cancels.discard(cancel)

    def _start_in_background(
        self, call: ToolCall, spec: ToolSpec, params: Any, turn: TurnState, context: ToolContext
    ) -> ToolOutcome:
        assert self.background is not None
        task = self.background.submit(spec, params, context, call["id"])
        turn.started_tasks.append(task.id)
        started = {
            "task_id": task.id,
            "status": "running",
            "message": f"{spec.title}已在后台开始运行。完成后会自动通知；也可用 check_background_tasks 查看进度。",
        }
        outcome = self.registry.finish(
            call["id"], spec.name, started, 0.0, context, task_id=task.id
        )
        outcome.summary = background_summary(started)
        return outcome


def background_summary(started: dict[str, Any]) -> str | None:
    """The row's line for a call that started a background task (None for any other result)."""
    if started.get("status") != "running" or "task_id" not in started:
        return None
    return f"已在后台运行（{started['task_id']}）"


def _note_sub_agent_event(event: RuntimeEvent, turn: TurnState) -> RuntimeEvent:
    """A sub-agent's usage counts for this turn and session; its end goes in the trace."""
    if event["type"] == "usage":
        turn.add_usage(event)
    elif event["type"] == "done":
        turn.record("sub_agent", **{k: v for k, v in event.items() if k != "type"})
    return event


def tool_message(call: ToolCall, content: str) -> ToolMessage:
    return {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": content}


def partition(calls: list[ToolCall], registry: ToolRegistry) -> list[list[ToolCall]]:
    """Consecutive concurrency-safe calls form one group; every other call is alone."""
    groups: list[list[ToolCall]] = []
    follows_safe = False
    for call in calls:
        spec = registry.get(call["name"])
        safe = spec is not None and spec.concurrency_safe
        if safe and follows_safe:
            groups[-1].append(call)
        else:
            groups.append([call])
        follows_safe = safe
    return groups
