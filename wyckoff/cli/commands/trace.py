"""`wyckoff trace ...`: the per-turn JSONL traces under scratchpad/."""

from __future__ import annotations

from typing import Annotated

import typer

from wyckoff.cli.output import json_text, print_json, print_notice, print_table, zone_name

STATUS_LABELS = {
    "completed": "完成",
    "error": "出错",
    "max_rounds": "达到轮数上限",
    "cancelled": "已取消",
}

app = typer.Typer(
    help="运行追踪 / per-turn traces: list, show.", no_args_is_help=True, rich_markup_mode=None
)


@app.command("list")
def list_traces(
    limit: Annotated[int, typer.Option("--limit", min=1, help="最多显示几条")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出最近的追踪 / recent traces."""
    from wyckoff.cli.traces import list_traces as traces_in
    from wyckoff.config import wyckoff_home

    traces = traces_in(wyckoff_home(), limit)
    if json_output:
        print_json({"traces": traces})
    elif not traces:
        print_notice("还没有追踪记录：每次提问（`wyckoff ask` 或终端界面）都会留下一条。")
    else:
        print_table(
            "追踪",
            [f"时间（{zone_name()}）", "id", "会话", "问题", "状态", "事件"],
            [
                [
                    started_at(t["id"]),
                    t["id"],
                    t["session_id"],
                    t["input"],
                    STATUS_LABELS.get(t["status"], "未结束"),
                    t["events"],
                ]
                for t in traces
            ],
        )


def started_at(trace_id: str) -> str:
    """When the turn began, from its id (YYYYMMDD-HHMMSS-…, the user's wall clock)."""
    from datetime import datetime

    try:
        return datetime.strptime(trace_id[:15], "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return ""


@app.command("show")
def show(
    trace_id: Annotated[str, typer.Argument(metavar="ID", help="追踪 id（或其开头）")],
) -> None:
    """逐行显示一个追踪 / print one trace, one JSON event per line."""
    from wyckoff.cli.traces import read_trace
    from wyckoff.config import wyckoff_home

    for entry in read_trace(wyckoff_home(), trace_id):
        typer.echo(json_text(entry))
