"""The TUI's slash commands: one table (`COMMANDS`) that the prompt's completion, /help, the
Ctrl+P palette and dispatch all read, and the commands that only show something."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wyckoff.cli.tui.app import WyckoffApp


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    run: Callable[[WyckoffApp, str], None]  # the app and the text after the name
    takes_argument: bool = False  # the palette fills the prompt instead of running it
    without_agent: bool = False  # works before a model is set up


def show_help(app: WyckoffApp, _: str = "") -> None:
    from textual.widgets import Markdown

    from wyckoff.cli.prompt_templates import TEMPLATES

    lines = ["**命令**", *[f"- `{c.name}` {c.description}" for c in COMMANDS]]
    if app.agent is not None:
        lines += [
            "",
            "**技能**",
            *[f"- `/{s.name}` {s.description}" for s in app.agent.skills.skills.values()],
        ]
    lines += [
        "",
        "**提示模板**（`wyckoff prompt show 名称` 查看全文）",
        *[f"- `{n}` {d}" for n, (d, _) in TEMPLATES.items()],
    ]
    lines += [
        "",
        "**按键**：Enter 发送 · Ctrl+J 换行 · ↑/↓ 历史 · Tab 补全命令 · Esc 取消回答或关闭对话框 · Ctrl+P 命令面板（命令、模型、技能） · Ctrl+N 新对话 · Ctrl+L 清屏 · Ctrl+Q 退出（对话框里也是退出）",
    ]
    app.mount_chat(Markdown("\n".join(lines), classes="help"))


def switch_model(app: WyckoffApp, model_id: str) -> None:
    """Without an id: the configured models, the current one starred."""
    from wyckoff.config import effective_config

    if not model_id:
        current = app.agent.status().model_id
        lines = [
            f"{'* ' if m.id == current else '  '}{m.id}: {m.provider} / {m.model}"
            for m in effective_config(app.agent.fresh_config()).models
        ]
        app.show_notice("模型（/model ID 切换）：\n" + "\n".join(lines))
        return
    app.agent.switch_model(model_id)
    app.show_notice(f"已切换到模型 {model_id}。")
    app.refresh_status()


def compact(app: WyckoffApp, _: str = "") -> None:
    event = app.agent.compact()
    if event is None:
        app.show_notice("没有压缩：对话太短，或摘要没有生成成功。")
    else:
        app.show_notice(
            f"上下文已压缩：{event['before']} 条 → {event['after']} 条（{event['archive_ref']}）"
        )
    app.refresh_status()


def show_tokens(app: WyckoffApp, _: str = "") -> None:
    status = app.agent.status()
    usage, used, window = status.usage, status.context_used, status.context_window
    app.show_notice(
        f"上下文约 {used:,} / {window:,} token（{used / window:.0%}）；本会话 输入 {usage['input_tokens']:,} 输出 {usage['output_tokens']:,} 缓存读 {usage['cache_read_tokens']:,} 缓存写 {usage['cache_write_tokens']:,}"
    )


def show_memories(app: WyckoffApp, query: str) -> None:
    from textual.widgets import Markdown

    from wyckoff.memory.recall import PIPELINE_LABELS, search

    memories = app.agent.memories
    if query:
        found = [
            (h.memory, f"（{PIPELINE_LABELS[h.pipeline]}匹配 {h.score:.2f}）")
            for h in search(memories, query)
        ]
    else:
        found = [(m, "") for m in memories.list_memories(include_superseded=False)]
    if not found:
        app.show_notice("没有匹配的记忆。" if query else "还没有长期记忆。")
        return
    lines = [f"**长期记忆**（{len(found)} 条；`wyckoff memory trace ID` 查看来源）", ""]
    lines += [
        f"- {m.id} `{m.dated_label}` {m.content}{note}{'（来自工具结果）' if m.is_data else ''}"
        for m, note in found
    ]
    app.mount_chat(Markdown("\n".join(lines), classes="help"))


def search_sessions(app: WyckoffApp, query: str) -> None:
    """The sessions whose messages hold the text, newest first, in the resume dialog."""
    from wyckoff.cli.session_search import ROLE_NAMES
    from wyckoff.cli.session_search import search_sessions as search
    from wyckoff.cli.tui.screens import ResumeScreen
    from wyckoff.errors import WyckoffError

    try:
        hits = search(app.agent.chat_log.store, query, limit=50)
    except WyckoffError as exc:  # e.g. no text, or a one-character word
        app.show_notice(exc.message, error=True)
        return
    sessions: dict[str, dict] = {}
    for hit in hits:  # one line a session, with its newest hit
        sessions.setdefault(
            hit.session_id,
            {
                "id": hit.session_id,
                "updated_at": hit.created_at,
                "title": f"{hit.title}｜{ROLE_NAMES[hit.role]}：{hit.snippet}",
                "messages": hit.messages,
            },
        )
    if not sessions:
        app.show_notice(f"没有找到包含「{query}」的消息。")
        return
    heading = f"包含「{query}」的会话 {len(sessions)} 个（回车恢复，Esc 取消）"
    app.push_screen(ResumeScreen(list(sessions.values()), heading), app.resume)


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "显示命令、技能和提示模板", show_help, without_agent=True),
    SlashCommand("/new", "开始新对话", lambda app, _: app.action_new_chat()),
    SlashCommand(
        "/clear",
        "清屏（不影响对话历史）",
        lambda app, _: app.action_clear_screen(),
        without_agent=True,
    ),
    SlashCommand("/model", "列出模型；后接模型 id 切换", switch_model),
    SlashCommand("/resume", "恢复保存的会话", lambda app, _: app.action_resume()),
    SlashCommand(
        "/search", "在所有会话里搜索文字，选中即恢复该会话", search_sessions, takes_argument=True
    ),
    SlashCommand("/fork", "从当前会话分出新会话", lambda app, _: app.fork()),
    SlashCommand("/compact", "立即压缩上下文", compact),
    SlashCommand("/token", "显示上下文与用量", show_tokens),
    SlashCommand("/memory", "查看长期记忆；/memory 关键词 按召回规则搜索", show_memories),
    SlashCommand(
        "/chart",
        "打开 K 线图（后接代码或名称，如 600519；加 --intraday 看分时）",
        lambda app, code: app.open_chart(code),
        takes_argument=True,
    ),
    SlashCommand("/quit", "退出", lambda app, _: app.exit(), without_agent=True),
)
BY_NAME = {command.name: command for command in COMMANDS}
