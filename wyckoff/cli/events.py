"""The RuntimeEvent contract (DESIGN.md): plain dicts with a `type` key.

The TUI, `wyckoff ask --output stream-json`, sub-agents and tests read exactly these.
Consumers ignore types they do not know. Beyond DESIGN.md's table the runtime emits
`background_wait` (headless ask waits for the background tasks it started), `approved`
(a risky call is about to run: how it was approved and the action as a sentence; headless
ask prints it to stderr), and the BackgroundTaskManager sends `task_update` (state,
stage, detail, progress, numbered by `seq`) to its listeners. Every event leaves the runtime with known keys cut out.

Sub-agents (cli/sub_agents.py): while a `delegate_to_*` call runs, the runtime yields its
child's `text_delta`, `tool_start`, `tool_result`, `tool_error`, `approved` and `usage`
events, then one `done`, each with three more keys (`SubAgentTag`): `agent` (research /
analysis / trading), `delegation_id` (one per call, e.g. "research-1a2b3c4d") and `call_id`
(the id of the delegate call, as in its `tool_start`). Their
`done` carries the delegation's status (completed / timeout / cancelled / error / empty)
and `trace_id` (the sub-agent's own trace). Front ends route events with `agent` to the
delegation's display, never into the main answer; tagged `usage` already counts in the
turn's and session's totals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

# The same dicts the providers stream, passed on as they are.
from wyckoff.cli.providers.base import (
    ProviderSwitch,
    TextDelta,
    ThinkingDelta,
    ToolCalls,
)
from wyckoff.token_usage import TokenUsage

DoneStatus = Literal["completed", "max_rounds", "cancelled", "error"]
# How a risky call came to run: --approve-all, --approve TOOL, "always allow" this session,
# an ask_user consent to that exact action, the dialog's "allow once" or its edited arguments.
ApprovedBy = Literal["approve_all", "flag", "always", "consent", "user", "edit"]


class SubAgentTag(TypedDict):
    agent: str  # research | analysis | trading
    delegation_id: str
    call_id: str  # the delegate call's id (its tool row)


class SubAgentDone(SubAgentTag):
    type: Literal["done"]
    status: Literal["completed", "timeout", "cancelled", "error", "empty"]
    text: str  # the result as the main agent reads it (within the output budget)
    error: str
    usage: dict[str, Any]
    elapsed_s: float
    trace_id: str | None


class ModelStart(TypedDict):
    type: Literal["model_start"]
    round: int
    provider: str
    model: str


class Thinking(TypedDict):
    """A model round's whole reasoning, once the round ends (after its thinking_deltas)."""

    type: Literal["thinking"]
    round: int
    text: str


class ToolStart(TypedDict):
    type: Literal["tool_start"]
    id: str
    name: str
    args: dict[str, Any]
    title: str


class ToolResult(TypedDict):
    type: Literal["tool_result"]
    id: str
    name: str
    result: str
    elapsed_s: float
    ref: str | None
    task_id: str | None
    summary: str | None  # one Chinese line for people, from the tool's ToolSpec.summarize


class ToolError(TypedDict):
    type: Literal["tool_error"]
    id: str
    name: str
    error: str
    elapsed_s: float


class Approved(TypedDict):
    type: Literal["approved"]
    id: str
    name: str
    by: ApprovedBy
    description: str
    args: dict[str, Any]  # the arguments it runs with (the user's, when edited)


class Usage(TokenUsage):
    type: Literal["usage"]
    cost: float | None


class Done(TypedDict):
    type: Literal["done"]
    text: str
    status: DoneStatus
    error: str | None
    usage: dict[str, Any]
    elapsed_s: float
    session_id: str | None


class Compaction(TypedDict):
    type: Literal["compaction"]
    before: int  # message counts
    after: int
    archive_ref: str | None


class Retry(TypedDict):
    type: Literal["retry"]
    reason: str
    attempt: int


class BackgroundWait(TypedDict):
    type: Literal["background_wait"]
    task_ids: list[str]


class TaskUpdate(TypedDict):
    type: Literal["task_update"]
    task_id: str
    tool: str
    title: str  # the tool's Chinese title
    seq: int  # the task's change count: a consumer drops an update older than one it showed
    status: str  # running | completed | failed | cancelled
    state: str  # 排队中 | 运行中 | 完成 | 失败 | 已取消
    stage: str
    detail: str
    progress: float | None
    elapsed_s: float


RuntimeEvent = (
    ModelStart
    | TextDelta
    | ThinkingDelta
    | Thinking
    | ToolCalls
    | ToolStart
    | ToolResult
    | ToolError
    | Approved
    | Compaction
    | Retry
    | ProviderSwitch
    | Usage
    | Done
    | SubAgentDone
    | BackgroundWait
    | TaskUpdate
)


def sub_agent_of(event: RuntimeEvent) -> str | None:
    """The sub-agent a relayed event comes from; None for the main agent's own events. (The
    tag rides on events of every type, which a TypedDict union cannot spell.)"""
    keys: Mapping[str, object] = event
    agent = keys.get("agent")
    return agent if isinstance(agent, str) else None


def usage_event(usage: TokenUsage, cost: float | None) -> Usage:
    return {"type": "usage", **usage, "cost": cost}


class UsageTotals:
    """Tokens and cost summed over several model calls (a turn, a session)."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.cost: float | None = None

    def add(self, event: Usage) -> None:
        self.input_tokens += event["input_tokens"]
        self.output_tokens += event["output_tokens"]
        self.cache_read_tokens += event["cache_read_tokens"]
        self.cache_write_tokens += event["cache_write_tokens"]
        if event["cost"] is not None:
            self.cost = (self.cost or 0.0) + event["cost"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
        }
