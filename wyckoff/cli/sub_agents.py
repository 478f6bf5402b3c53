"""Sub-agents: research, analysis and trading delegates over the same AgentRuntime loop.

The main agent calls `delegate_to_<role>(task, context)` like any other tool. Each call runs
a child runtime (`AgentRuntime.child`) with the role's own instructions, a whitelisted view
of the registry (`SubAgentToolProxy`) and the role's budgets (`SubAgentPolicy`). Progress
goes to front ends as the child's RuntimeEvents tagged with `agent` and `delegation_id`;
the main agent reads a structured result (`DelegationResult`) as the tool result.
Several delegate calls in one reply run at once, at most MAX_PARALLEL_DELEGATES.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field

from wyckoff.cli.events import RuntimeEvent
from wyckoff.cli.tokens import count_text
from wyckoff.cli.tools import ToolContext, ToolRegistry, ToolSpec
from wyckoff.untrusted import PROMPT_RULE

MAX_PARALLEL_DELEGATES = 3
FORWARDED_EVENTS = ("text_delta", "tool_start", "tool_result", "tool_error", "approved", "usage")
TRIMMED_MARK = "[已按预算裁剪：只保留了上下文最近的部分]"
SENTENCE_ENDS = "。！？；!?;\n"
WATCH_INTERVAL_S = 0.05

DelegationStatus = Literal["completed", "timeout", "cancelled", "error", "empty"]
STATUS_LABELS: dict[str, str] = {
    "completed": "完成",
    "timeout": "超时",
    "cancelled": "已取消",
    "error": "出错",
    "empty": "无结论",
}


@dataclass(frozen=True)
class SubAgentPolicy:
    """One role's governance: what it may use and how long and how much."""

    name: str
    duty: str
    total_timeout_s: float
    tool_timeout_s: float
    max_tool_rounds: int
    context_budget_tokens: int
    result_budget_chars: int
    tools: tuple[str, ...]
    fallback_tools: tuple[str, ...]
    label: str = ""  # the role's Chinese name, for people

    @property
    def title(self) -> str:
        return f"{self.label}子智能体" if self.label else f"{self.name} 子智能体"


# The spec's governance table and whitelists (agent-design.md, sub-agent section).
SUB_AGENTS: dict[str, SubAgentPolicy] = {
    policy.name: policy
    for policy in (
        SubAgentPolicy(
            "research",
            "数据收集、全市场扫描、信号、复盘、回测",
            240,
            90,
            8,
            24_000,
            3_000,
            (
                "search_stock_by_name",
                "analyze_stock",
                "get_market_overview",
                "get_market_history",
                "query_history",
                "screen_stocks",
                "run_backtest",
                "check_background_tasks",
            ),
            ("get_market_overview", "query_history", "check_background_tasks"),
            label="研究",
        ),
        SubAgentPolicy(
            "analysis",
            "个股诊断、持仓体检、AI 研报",
            180,
            75,
            8,
            20_000,
            2_500,
            (
                "analyze_stock",
                "portfolio",
                "get_market_overview",
                "get_market_history",
                "generate_ai_report",
            ),
            ("analyze_stock", "portfolio", "get_market_overview"),
            label="分析",
        ),
        SubAgentPolicy(
            "trading",
            "去留决策、攻防指令、调仓计划",
            120,
            45,
            6,
            12_000,
            1_600,
            (
                "portfolio",
                "generate_strategy_decision",
                "analyze_stock",
                "get_market_overview",
                "get_market_history",
            ),
            ("portfolio", "generate_strategy_decision", "get_market_overview"),
            label="交易",
        ),
    )
}

INSTRUCTIONS = """你是 Wyckoff 的 {name} 子智能体，职责：{duty}。主 Agent 把一项局部任务委派给你，你完成后把结论交回给它（不是直接回答用户）。

工作规则：
- 只用你可用的工具获取数据；所有价格、指标和信号都必须来自工具结果，绝不编造。
- 数据 source 是 demo（合成演示数据）或已过时，必须在结论里写明。
- 你不修改持仓、不执行交易、不向用户提问：需要用户决定的事写进结论，交给主 Agent。
- 结论先行，{budget} 字以内：要点、依据、风险点与失效条件。
{untrusted_rule}

今天是 {today}。"""


class DelegateParams(BaseModel):
    task: str = Field(min_length=1, description="交给子智能体的具体任务（一句话说清要什么结论）")
    context: str = Field(
        default="", description="可选：完成任务需要的材料（超出预算时只保留最近部分）"
    )


class SubAgentToolProxy(ToolRegistry):
    """The registry as one role sees it: only whitelisted tools, each bounded by the role's
    per-tool timeout; any other call is refused with a tool error."""

    def __init__(self, registry: ToolRegistry, policy: SubAgentPolicy) -> None:
        allowed = [registry.get(name) for name in policy.tools if name in registry]
        super().__init__(
            [replace(s, timeout_s=min(s.timeout_s, policy.tool_timeout_s)) for s in allowed]
        )
        self.parent = registry
        self.agent = policy.name

    def schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        return self.parent.schemas(names if names is not None else self.names)

    def validate(self, call: Mapping[str, Any]) -> tuple[ToolSpec, BaseModel] | str:
        if call["name"] not in self:
            return (
                f"{self.agent} 子智能体不能使用工具 {call['name']}；"
                f"可用工具：{', '.join(self.names)}。"
            )
        return super().validate(call)


@dataclass
class DelegationResult:
    """What the main agent reads back (the spec's result object)."""

    agent: str
    status: DelegationStatus
    result: str
    usage: dict[str, Any]
    elapsed: float
    rounds: int
    tool_calls: list[str]
    context_truncated: bool
    result_truncated: bool
    error: str
    policy: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def next_action_policy(status: DelegationStatus, policy: SubAgentPolicy) -> dict[str, Any]:
    """What the main agent should do next, by status (the spec's policy table)."""
    if status == "completed":
        return {
            "next_action": "use_result",
            "retryable": False,
            "fallback_tools": [],
            "instruction": "使用子智能体的结论回答；如标记了裁剪，把它当作预算内摘要。",
        }
    if status == "cancelled":
        return {
            "next_action": "stop_and_report_cancelled",
            "retryable": False,
            "fallback_tools": [],
            "instruction": "用户已取消：停止任务，告诉用户委派已取消。",
        }
    return {
        "next_action": "fallback_to_direct_tools",
        "retryable": status != "empty",
        "fallback_tools": list(policy.fallback_tools),
        "instruction": "子智能体没有给出结论：改用 fallback_tools 里的工具直接获取数据后回答。",
    }


def trim_context(context: str, budget_tokens: int) -> tuple[str, bool]:
    """`context` within `budget_tokens`: the most recent part, marked, when it is over."""
    if count_text(context) <= budget_tokens:
        return context, False
    low, high = 0, len(context)  # the smallest start whose tail fits
    while low < high:
        middle = (low + high) // 2
        if count_text(context[middle:]) <= budget_tokens:
            high = middle
        else:
            low = middle + 1
    return f"{TRIMMED_MARK}\n{context[low:]}", True


def cut_result(text: str, budget_chars: int) -> tuple[str, bool]:
    """`text` within `budget_chars`, cut after the last sentence that fits."""
    if len(text) <= budget_chars:
        return text, False
    head = text[:budget_chars]
    end = max(head.rfind(mark) for mark in SENTENCE_ENDS)
    if end >= budget_chars // 2:
        head = head[: end + 1]
    return head.rstrip(), True


def brief_for(task: str, context: str, policy: SubAgentPolicy) -> tuple[str, bool]:
    """The sub-agent's one user message: the task and the budgeted context."""
    if not context.strip():
        return task, False
    room = max(policy.context_budget_tokens - count_text(task), 0)
    trimmed, truncated = trim_context(context, room)
    return f"任务：{task}\n\n材料：\n{trimmed}", truncated


class _Deadline:
    """Stops a running child when the user cancels or its total time is up."""

    def __init__(self, child, cancel: threading.Event, timeout_s: float) -> None:
        self.reason: DelegationStatus | None = None
        self._finished = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(child, cancel, time.monotonic() + timeout_s), daemon=True
        )
        self._thread.start()

    def _watch(self, child, cancel: threading.Event, deadline: float) -> None:
        while not self._finished.wait(WATCH_INTERVAL_S):
            if cancel.is_set() or time.monotonic() >= deadline:
                self.reason = "cancelled" if cancel.is_set() else "timeout"
                child.cancel()
                return

    def finish(self) -> None:
        self._finished.set()
        self._thread.join()


class SubAgents:
    """The three delegate tools bound to one main runtime."""

    def __init__(
        self,
        runtime,
        policies: dict[str, SubAgentPolicy] | None = None,
        max_parallel: int = MAX_PARALLEL_DELEGATES,
    ) -> None:
        self.runtime = runtime
        self.policies = policies or SUB_AGENTS
        self._slots = threading.BoundedSemaphore(max_parallel)

    def attach(self) -> None:
        for spec in self.specs():
            self.runtime.registry.register(spec)

    def specs(self) -> list[ToolSpec]:
        return [self._spec(policy) for policy in self.policies.values()]

    def _spec(self, policy: SubAgentPolicy) -> ToolSpec:
        return ToolSpec(
            name=f"delegate_to_{policy.name}",
            description=f"委派给 {policy.name} 子智能体（{policy.duty}）。它用这些工具独立完成任务并返回"
            f"结构化结论：{', '.join(policy.tools)}。互不依赖的委派可在同一次回复里并行调用。",
            params=DelegateParams,
            func=lambda params, context: self.delegate(policy, params, context),
            title=policy.title,
            concurrency_safe=True,
            summarize=summarize_delegation,
            # waits for a free slot, then its own deadline; cancelled, it still answers
            timeout_s=2 * policy.total_timeout_s + 30,
            cancel_grace_s=5.0,
            reports_events=True,
        )

    def delegate(
        self, policy: SubAgentPolicy, params: DelegateParams, context: ToolContext
    ) -> dict[str, Any]:
        with self._slots:
            return Delegation(self.runtime, policy, context).run(params)


class Delegation:
    """One run of one sub-agent, from brief to result object."""

    def __init__(self, runtime, policy: SubAgentPolicy, context: ToolContext) -> None:
        self.policy = policy
        self.context = context
        self.id = f"{policy.name}-{uuid.uuid4().hex[:8]}"
        self.child = runtime.child(
            SubAgentToolProxy(runtime.registry, policy),
            instructions=INSTRUCTIONS.format(
                name=policy.name,
                duty=policy.duty,
                budget=policy.result_budget_chars,
                untrusted_rule=PROMPT_RULE,
                today=date.today().isoformat(),
            ),
            max_rounds=policy.max_tool_rounds,
        )

    def run(self, params: DelegateParams) -> dict[str, Any]:
        started = time.monotonic()
        brief, context_truncated = brief_for(params.task, params.context, self.policy)
        rounds, tool_calls, done = 0, [], {}
        deadline = _Deadline(self.child, self.context.cancel_event, self.policy.total_timeout_s)
        try:
            for event in self.child.run_stream([{"role": "user", "content": brief}]):
                kind = event["type"]
                rounds += kind == "model_start"
                if kind == "tool_start":
                    tool_calls.append(event["name"])
                if kind in FORWARDED_EVENTS:
                    self._emit(event)
                if kind == "done":
                    done = event
        finally:
            deadline.finish()
        status, error = _status(done, deadline.reason, self.policy)
        text, result_truncated = cut_result(
            done.get("text", "").strip(), self.policy.result_budget_chars
        )
        if status == "completed" and not text:
            status = "empty"
        result = DelegationResult(
            agent=self.policy.name,
            status=status,
            result=text,
            usage=done.get("usage", {}),
            elapsed=round(time.monotonic() - started, 3),
            rounds=rounds,
            tool_calls=tool_calls,
            context_truncated=context_truncated,
            result_truncated=result_truncated,
            error=error,
            policy=next_action_policy(status, self.policy),
        )
        trace = self.child.last_trace
        self._emit(
            {
                "type": "done",
                "status": status,
                "text": text,
                "error": error,
                "usage": result.usage,
                "elapsed_s": result.elapsed,
                "trace_id": trace.id if trace is not None else None,
            }
        )
        return result.as_dict()

    def _emit(self, event: RuntimeEvent) -> None:
        if self.context.on_event is not None:
            self.context.on_event({**event, "agent": self.policy.name, "delegation_id": self.id})


def _status(
    done: dict[str, Any], stopped: DelegationStatus | None, policy: SubAgentPolicy
) -> tuple[DelegationStatus, str]:
    """The delegation's status and error sentence from the child's end and why it stopped."""
    if stopped == "timeout":
        return (
            "timeout",
            f"{policy.name} 子智能体超过 {policy.total_timeout_s:g} 秒总时限，已停止。",
        )
    if stopped == "cancelled" or done.get("status") == "cancelled":
        return "cancelled", "用户取消了委派。"
    if done.get("status") == "max_rounds":
        return (
            "error",
            f"{policy.name} 子智能体用完了 {policy.max_tool_rounds} 轮工具往返仍未给出结论。",
        )
    if done.get("status") != "completed":
        return "error", done.get("error") or "子智能体没有正常结束。"
    return "completed", ""


def summarize_delegation(result: dict[str, Any]) -> str:
    """One line for people: status, rounds, tools and time."""
    flags = "，结论已按预算截断" if result["result_truncated"] else ""
    return (
        f"{agent_title(result['agent'])}{STATUS_LABELS[result['status']]}：{result['rounds']} 轮，"
        f"{len(result['tool_calls'])} 次工具调用，{result['elapsed']:.1f}s{flags}"
    )


def agent_title(agent: str) -> str:
    """A sub-agent's name for people ("研究子智能体"), from its role name ("research")."""
    policy = SUB_AGENTS.get(agent)
    return policy.title if policy else f"{agent} 子智能体"
