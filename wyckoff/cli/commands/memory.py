"""`wyckoff memory ...`: the long-term memories — list, show, add, rm, search, trace, export."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from wyckoff.cli.commands import memory_views
from wyckoff.cli.commands.memory_views import day, memory_store, origin, status
from wyckoff.cli.output import local_time, print_json, print_notice, print_table
from wyckoff.errors import UsageError
from wyckoff.memory.extraction import remember
from wyckoff.memory.recall import PIPELINE_LABELS
from wyckoff.memory.recall import search as recall_search
from wyckoff.memory.store import (
    TYPE_LABELS,
    TYPES,
    type_choices,
)

app = typer.Typer(
    help="长期记忆 / long-term memory: list, show, add, rm, search, trace, export.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

TYPE_HELP = "类型：" + type_choices()


class ExportFormat(StrEnum):
    md = "md"
    json = "json"


def _memory_id(text: str) -> int:
    if not text.isdigit():
        raise UsageError(f"记忆 id 应该是数字，收到的是 {text!r}：用 `wyckoff memory list` 查看。")
    return int(text)


@app.command("list")
def list_memories(
    memory_type: Annotated[str | None, typer.Option("--type", help=TYPE_HELP)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出记忆（新的在前）/ list memories, newest first."""
    memory_views.list_memories(memory_type, json_output)


@app.command("show")
def show(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="记忆 id")],
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """显示一条记忆 / print one memory."""
    memory = memory_store().require(_memory_id(memory_id))
    if json_output:
        print_json(memory.as_dict())
        return
    typer.echo(
        "\n".join(
            [
                f"记忆 {memory.id}（{memory.type}）",
                f"内容：{memory.content}",
                f"股票：{','.join(memory.codes) or '无（全局）'}",
                f"来源：{origin(memory)}（{memory.source_ref or '未知'}）",
                f"创建于：{local_time(memory.created_at)}",
                f"状态：{status(memory)}",
            ]
        )
    )


@app.command("add")
def add(
    content: Annotated[str, typer.Argument(help="记忆内容")],
    memory_type: Annotated[str, typer.Option("--type", help=TYPE_HELP)] = "preference",
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """添加一条记忆（与已有记忆去重）/ add a memory (deduplicated)."""
    outcome = remember(memory_store(), content, memory_type, source_ref="cli")
    if outcome.status == "skipped":  # e.g. a rule about approvals: not something memory holds
        raise UsageError(outcome.sentence())
    if json_output:
        print_json(outcome.__dict__)
    else:
        typer.echo(outcome.sentence())


@app.command("rm")
def remove(memory_id: Annotated[str, typer.Argument(metavar="ID", help="记忆 id")]) -> None:
    """删除一条记忆 / delete a memory."""
    number = _memory_id(memory_id)
    memories = memory_store()
    memories.require(number)
    memories.delete(number)
    typer.echo(f"已删除记忆 {number}。")


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="查询文字，如一句问题或股票名")],
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """按召回规则搜索记忆，显示命中管道和得分 / search as recall does."""
    hits = recall_search(memory_store(), query)
    if json_output:
        print_json(
            {
                "hits": [
                    {**h.memory.as_dict(), "pipeline": h.pipeline, "score": round(h.score, 4)}
                    for h in hits
                ]
            }
        )
    elif not hits:
        print_notice("没有匹配的记忆。")
    else:
        print_table(
            f"匹配的记忆（{len(hits)} 条）",
            ["id", "类型", "内容", "匹配方式", "得分"],
            [
                [
                    h.memory.id,
                    TYPE_LABELS.get(h.memory.type, h.memory.type),
                    h.memory.content,
                    PIPELINE_LABELS[h.pipeline],
                    f"{h.score:.3f}",
                ]
                for h in hits
            ],
        )


@app.command("trace")
def trace(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="记忆 id")],
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """回看记忆的来源和取代链 / where a memory came from and what replaced it."""
    memories = memory_store()
    memory = memories.require(_memory_id(memory_id))
    chain = memories.chain(memory.id)
    sources = [memories.get(i) for i in memory.metadata.get("source_l1_ids", [])]
    if json_output:
        print_json(
            {
                "memory": memory.as_dict(),
                "chain": [m.as_dict() for m in chain],
                "sources": [m.as_dict() for m in sources if m],
            }
        )
        return
    meta = memory.metadata
    lines = [
        f"记忆 {memory.id}（{memory.type}）：{memory.content}",
        f"来源：{origin(memory)}（{memory.source_ref or '未知'}）",
        f"提取方式：{meta.get('extractor', '未知')}",
        *([f"提取自会话的前 {meta['messages']} 条消息"] if "messages" in meta else []),
        f"创建于：{local_time(memory.created_at)}",
    ]
    if sources:
        lines.append("归纳自 L1 记忆：")
        lines += [f"  - {m.id} [{m.type}] {m.content}" for m in sources if m]
    if len(chain) > 1:
        lines.append("取代链（旧 → 新）：")
        lines += [
            f"  {'→ ' if i else ''}{m.id} {day(m.created_at)} {m.content}"
            + ("  ← 当前" if m.id == memory.id else "")
            for i, m in enumerate(chain)
        ]
    typer.echo("\n".join(lines))


@app.command("export")
def export(
    export_format: Annotated[ExportFormat, typer.Option("--format")] = ExportFormat.md,
) -> None:
    """导出全部记忆 / export every memory (md or json)."""
    memories = memory_store().list_memories(limit=10_000)
    if export_format == ExportFormat.json:
        print_json({"memories": [m.as_dict() for m in memories]})
        return
    lines = ["# Wyckoff 长期记忆", ""]
    for memory_type in TYPES:
        group = [m for m in memories if m.type == memory_type]
        if group:
            lines += [f"## {TYPE_LABELS[memory_type]}（{memory_type}）", ""]
            lines += [
                f"- {m.id}. {m.content}"
                + (f"（股票 {','.join(m.codes)}）" if m.codes else "")
                + (f"（{origin(m)}）" if m.is_data else "")
                + (f"（已被 {m.superseded_by} 取代）" if m.superseded_by else "")
                for m in group
            ]
            lines.append("")
    typer.echo("\n".join(lines))
