"""`wyckoff approvals ...`: risky calls scheduled runs left for the user to approve."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import local_time, print_json, print_notice, print_table
from wyckoff.store import Store

app = typer.Typer(
    help="待批准操作 / approvals: list, approve, reject.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _context():
    """Approving runs the queued call through the tool registry, so it needs every tool."""
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.config import wyckoff_home

    home = wyckoff_home()
    return ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))


@app.command("list")
def list_approvals(
    all_items: Annotated[bool, typer.Option("--all", help="包括已处理的")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出待批准的操作 / list pending approvals."""
    from wyckoff.routine.approvals import STATUS_LABELS, history, pending

    store = _context().store
    items = history(store) if all_items else pending(store)
    if json_output:
        print_json({"approvals": items})
        return
    if not items:
        print_notice("没有待批准的操作。")
        return
    print_table(
        "待批准的操作",
        ["编号", "状态", "操作", "来源", "提出时间", "过期时间"],
        [
            [
                i["id"],
                STATUS_LABELS.get(i["status"], i["status"]),
                i["description"],
                i["origin"],
                local_time(i["created_at"], seconds=False),
                local_time(i["expires_at"], seconds=False),
            ]
            for i in items
        ],
    )
    for item in items:
        if item["status"] == "pending" and item["result"]:
            print_notice(f"#{item['id']} 上次批准时没有执行：{item['result']}")
    if not all_items:
        print_notice(
            "批准：`wyckoff approvals approve 编号`；拒绝：`wyckoff approvals reject 编号`。"
        )


@app.command("approve")
def approve(
    approval_id: Annotated[int, typer.Argument(metavar="ID", help="编号（见 approvals list）")],
) -> None:
    """批准并执行一次 / approve and run it once."""
    from wyckoff.routine.approvals import approve as run_approved

    item = run_approved(_context(), approval_id)
    if item["status"] == "applied":
        print_notice(f"已批准并执行 #{approval_id}：{item['result']}")
        return
    print_notice(
        f"#{approval_id} 没有执行（{item['result'].rstrip('。')}），仍在待批准中："
        f"处理好后再 `wyckoff approvals approve {approval_id}`，"
        f"或用 `wyckoff approvals reject {approval_id}` 放弃。"
    )
    raise typer.Exit(1)


@app.command("reject")
def reject(
    approval_id: Annotated[int, typer.Argument(metavar="ID", help="编号（见 approvals list）")],
) -> None:
    """拒绝（不执行）/ reject it."""
    from wyckoff.routine.approvals import reject as drop

    item = drop(_context().store, approval_id)
    print_notice(f"已拒绝 #{approval_id}：{item['description']}（没有执行）")
