"""`wyckoff session ...`: saved chats — list, search, show, export, fork."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from wyckoff.cli.chat_log import ChatLog, export_markdown, without_secrets
from wyckoff.cli.output import local_time, print_json, print_notice, print_table
from wyckoff.store import Store

app = typer.Typer(
    help="会话记录 / saved sessions: list, search, show, export, fork, compact.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class ExportFormat(StrEnum):
    md = "md"
    json = "json"


def _chat_log():
    from wyckoff.config import wyckoff_home

    return ChatLog(Store.in_home(wyckoff_home()))


@app.command("list")
def list_sessions(
    limit: Annotated[int, typer.Option("--limit", min=1, help="最多显示几条")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出最近的会话 / recent sessions."""
    sessions = _chat_log().list_sessions(limit)
    if json_output:
        print_json({"sessions": sessions})
    elif not sessions:
        print_notice('还没有会话。运行 `wyckoff ask "..."` 或 `wyckoff` 开始。')
    else:
        print_table(
            "会话",
            ["id", "标题", "消息", "更新于"],
            [[s["id"], s["title"], s["messages"], local_time(s["updated_at"])] for s in sessions],
        )


@app.command("search")
def search(
    words: Annotated[
        list[str], typer.Argument(help="要找的词（几个词都要出现；每个词至少 2 个字）")
    ],
    limit: Annotated[int, typer.Option("--limit", min=1, help="最多显示几条")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """在所有会话的消息里搜索（新的在前）/ search every session's messages, newest first."""
    from wyckoff.cli.session_search import ROLE_NAMES, search_sessions
    from wyckoff.config import remember_configured_secrets, wyckoff_home

    remember_configured_secrets(wyckoff_home())  # so a configured key is masked in snippets
    text = " ".join(words)
    hits = search_sessions(_chat_log().store, text, limit)
    if json_output:
        print_json(
            {"hits": [{**h.as_dict(), "local_time": local_time(h.created_at)} for h in hits]}
        )
    elif not hits:
        print_notice(f"没有找到包含 {text!r} 的消息。")
    else:
        print_table(
            f"找到 {len(hits)} 条消息（新的在前；`wyckoff session show ID` 查看全文）",
            ["会话", "标题", "日期", "角色", "片段"],
            [
                [
                    h.session_id,
                    h.title,
                    local_time(h.created_at, seconds=False),
                    ROLE_NAMES[h.role],
                    h.snippet,
                ]
                for h in hits
            ],
        )


@app.command("show")
def show(session_id: Annotated[str, typer.Argument(metavar="ID", help="会话 id")]) -> None:
    """显示会话内容 / print a session."""
    chat_log = _chat_log()
    messages = [without_secrets(m) for m in chat_log.load(session_id)]
    typer.echo(export_markdown(chat_log.require(session_id), messages))


@app.command("export")
def export(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="会话 id")],
    format: Annotated[ExportFormat, typer.Option("--format", help="md | json")] = ExportFormat.md,
) -> None:
    """导出会话 / export a session as Markdown or JSON."""
    chat_log = _chat_log()
    session = chat_log.require(session_id)
    messages = [without_secrets(m) for m in chat_log.load(session_id)]  # older logs too
    if format is ExportFormat.json:
        print_json({"session": session, "messages": messages})
    else:
        typer.echo(export_markdown(session, messages))


@app.command("fork")
def fork(session_id: Annotated[str, typer.Argument(metavar="ID", help="会话 id")]) -> None:
    """从某个会话分出一个新会话 / copy a session into a new one."""
    new_id = _chat_log().fork(session_id)
    typer.echo(new_id)


@app.command("compact")
def compact(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="会话 id")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="用于写摘要的模型 id")] = None,
) -> None:
    """压缩会话上下文（原文存入可恢复归档）/ compact a session now."""
    from wyckoff.cli.agent import open_agent

    agent = open_agent(model_id=model, session_id=session_id)
    event = agent.compact()
    if event is None:
        print_notice("没有压缩：会话太短，或摘要没有生成成功；会话保持原样。")
        return
    print_notice(
        f"已压缩：{event['before']} 条消息 → {event['after']} 条；原文归档 {event['archive_ref']}"
    )
