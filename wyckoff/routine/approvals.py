"""Approvals a scheduled run left for the user: a risky tool call becomes a pending approval
(never an action) with the Chinese sentence its approval dialog would show; approving it
runs the call once, rejecting or letting it expire (after `TTL_HOURS`) drops it. A call
that fails when approved (the book changed: the sell now over-sells) was not applied, so
it waits again, pending, with why in `result`, to be approved once fixed or rejected.

Read function for other front ends: `pending(store)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import approval_store
from wyckoff.errors import UsageError, WyckoffError

if TYPE_CHECKING:
    from wyckoff.cli.tools import ToolContext
    from wyckoff.store import Store

TTL_HOURS = 24


STATUS_LABELS = {
    "pending": "待批准",
    "applied": "已执行",
    "failed": "执行失败",  # rows of versions that spent a request whose call failed
    "rejected": "已拒绝",
    "expired": "已过期",
}


def queue(store: Store, tool: str, args: dict, description: str, origin: str) -> int:
    with store.transaction():
        return approval_store.add(store, tool, args, description, origin, TTL_HOURS)


def pending(store: Store) -> list[dict[str, Any]]:
    """What waits for the user, newest first (stale ones expire first)."""
    with store.transaction():
        approval_store.expire(store)
    return approval_store.listed(store)


def history(store: Store) -> list[dict[str, Any]]:
    return approval_store.listed(store, status=None)


def reject(store: Store, approval_id: int) -> dict[str, Any]:
    with store.transaction():
        if not approval_store.decide(store, approval_id, "rejected"):
            _not_pending(store, approval_id)
    return approval_store.one(store, approval_id) or {}


def approve(context: ToolContext, approval_id: int) -> dict[str, Any]:
    """Run the approved call once; the approval with its result: status `applied`, or
    `pending` again with why the call failed (nothing was applied)."""
    from wyckoff.cli.tools import ToolFailure

    store = context.store
    with store.transaction():
        if not approval_store.decide(store, approval_id, "approved"):
            _not_pending(store, approval_id)
    item = approval_store.one(store, approval_id)
    assert item is not None
    checked = context.registry.validate({"name": item["tool"], "args": item["args"]})
    try:
        if isinstance(checked, str):
            raise ToolFailure(checked)
        spec, params = checked
        result = spec.func(params, context)
    except WyckoffError as exc:
        with store.transaction():
            approval_store.reopen(store, approval_id, exc.message)
        return {**item, "status": "pending", "result": exc.message}
    text = context.registry.summarize(spec.name, result) or "已执行"
    with store.transaction():
        approval_store.record_result(store, approval_id, "applied", text)
    return {**item, "status": "applied", "result": text}


def _not_pending(store: Store, approval_id: int) -> None:
    item = approval_store.one(store, approval_id)
    if item is None:
        raise UsageError(f"没有编号 {approval_id} 的待批准操作。用 `wyckoff approvals list` 查看。")
    states = {
        "expired": "已过期",
        "approved": "已批准过",
        "applied": "已执行过",
        "failed": "已执行过（失败）",
        "rejected": "已拒绝",
    }
    if item["status"] == "pending":  # pending but past its expiry
        raise UsageError(f"待批准操作 #{approval_id} 已过期，没有执行。需要的话请重新发起。")
    raise UsageError(
        f"待批准操作 #{approval_id} {states.get(item['status'], item['status'])}，不会再执行。"
    )
