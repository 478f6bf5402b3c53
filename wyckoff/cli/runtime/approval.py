"""Who approves a risky tool call: `--approve`/`--approve-all`, the session's "always allow"
answers, a one-time consent the user gave in chat, or the front end's confirm dialog.
A sub-agent shares its parent's policy, so its risky calls are approved the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from wyckoff.cli.events import ApprovedBy
from wyckoff.cli.messages import ToolCall
from wyckoff.cli.tools import ToolContext, ToolRegistry, ToolSpec, canonical_args

ConfirmDecision = Literal["allow", "always", "edit", "deny"]


@dataclass
class Approval:
    """A confirm callback's answer for one risky call."""

    decision: ConfirmDecision
    args: dict[str, Any] | None = None  # for "edit"


ConfirmCallback = Callable[[dict[str, Any]], Approval]


class ApprovalPolicy:
    """The approvals of one session: reset when the front end switches sessions."""

    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext,
        *,
        confirm: ConfirmCallback | None = None,
        approve: tuple[str, ...] | list[str] = (),
        approve_all: bool = False,
    ) -> None:
        self.registry = registry
        self.context = context
        self.confirm = confirm
        self.approved_by_flag = frozenset(approve)
        self.always_allowed: set[str] = set()  # "always allow" answers, this session only
        self.approve_all = approve_all

    def reset(self) -> None:
        """Another session: no "always allow" answer or unused consent carries over."""
        self.always_allowed.clear()
        self.context.consents.clear()
        self.context.egress.reset()

    def approve(
        self, call: ToolCall, spec: ToolSpec, host: str | None = None
    ) -> tuple[ApprovedBy, dict[str, Any] | None] | str:
        """How the call is approved (with edited arguments, if any), or the refusal to report.
        `host`: the call sends to a host not approved since the session read private data."""
        name, args = call["name"], call.get("args") or {}
        if self.approve_all:
            return "approve_all", None
        if name in self.approved_by_flag:
            return "flag", None
        if name in self.always_allowed:
            return "always", None
        consents = self.context.consents
        key = (name, canonical_args(args))
        if key in consents:
            consents.discard(key)  # consent covers this one action, once
            return "consent", None
        if self.confirm is None:
            why = f"：{self.context.egress.reason(host)}。" if host else "，"
            return (
                f"{name} 需要用户批准{why}当前是无界面模式，已拒绝执行。请告诉用户要执行的具体操作；"
                f"用户可以用 `--approve {name}`（或 `--approve-all`）重新运行来允许它。"
            )
        return self._ask(call, spec, host)

    def _ask(
        self, call: ToolCall, spec: ToolSpec, host: str | None
    ) -> tuple[ApprovedBy, dict[str, Any] | None] | str:
        """The user's answer in the front end's dialog."""
        assert self.confirm is not None
        name, args = call["name"], call.get("args") or {}
        approval = self.confirm(
            {
                "id": call["id"],
                "name": name,
                "args": args,
                "title": spec.title,
                "description": self.registry.describe(name, args, self.context),
                "describe": lambda edited: self.registry.describe(name, edited, self.context),
                "always_label": f"本会话总是允许发往 {host}" if host else None,
            }
        )
        if approval.decision == "always":
            if host:
                self.context.egress.approve(host)
            else:
                self.always_allowed.add(name)
            return "always", None
        if approval.decision == "allow":
            return "user", None
        if approval.decision == "edit" and approval.args is not None:
            return "edit", approval.args
        return f"用户拒绝了这次 {name} 调用。不要重复同样的操作，除非用户明确要求。"
