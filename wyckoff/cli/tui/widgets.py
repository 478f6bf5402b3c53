"""Widgets of the chat screen: messages, tool rows, notices, the status bar, the background
panel and the prompt (sub-agent blocks: delegation.py; the K-line chart: kline.py)."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Collapsible, Markdown, ProgressBar, Static, TextArea

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WAITING_FOR_MODEL = "等待模型回复"
LOADING_AGENT = "正在加载模型与工具"


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Text(text), classes="user-message")


class AssistantMessage(Markdown):
    """The answer, streamed as Markdown."""

    def __init__(self) -> None:
        super().__init__("", classes="assistant-message")
        self.text = ""


class ThinkingBlock(Collapsible):
    def __init__(self) -> None:
        self.body = Static("", classes="thinking-text")
        super().__init__(self.body, title="思考过程", collapsed=True, classes="thinking")
        self.text = ""

    def add(self, text: str) -> None:
        self.text += text
        self.body.update(Text(self.text))


class Notice(Static):
    """A quiet one-line remark (retry, fallback, compaction), or an error in red."""

    def __init__(self, text: str, error: bool = False) -> None:
        super().__init__(Text(text), classes="notice error" if error else "notice")


class WaitingRow(Static):
    """A spinner with the seconds waited: shown until the model's first output arrives, or
    while the model and tools are loading, so a slow start never looks like a hang."""

    def __init__(self, label: str) -> None:
        super().__init__(classes="waiting-row")
        self.label = label
        self.started = time.monotonic()
        self.frame = 0

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        self.frame += 1
        waited = int(time.monotonic() - self.started)
        self.update(
            Text.assemble(
                (f"{SPINNER[self.frame % len(SPINNER)]} ", "yellow"),
                f"{self.label}… {waited}s",
                ("  Esc 取消" if self.label == WAITING_FOR_MODEL else "", "dim"),
            )
        )


class ToolRow(Static):
    """One tool call: title and arguments, a spinner while it runs, then outcome and time."""

    class Selected(Message):
        def __init__(self, row: ToolRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, call_id: str, name: str, title: str, args: dict[str, Any]) -> None:
        super().__init__(classes="tool-row running")
        self.call_id, self.tool_name, self.title, self.args = call_id, name, title, args
        self.frame = 0
        self.outcome: str | None = None
        self.failed = False
        self.chart_code: str | None = None
        self._spinner: Timer | None = None

    def on_mount(self) -> None:
        # A fast tool can finish before the row is mounted: then there is nothing to spin.
        if self.outcome is None:
            self._spinner = self.set_interval(0.1, self._spin)
        self._render_row()

    def _spin(self) -> None:
        self.frame += 1
        self._render_row()

    def finish(
        self, outcome: str, elapsed_s: float, failed: bool = False, chart_code: str | None = None
    ) -> None:
        if self._spinner is not None:
            self._spinner.stop()
        self.outcome, self.failed, self.chart_code = outcome, failed, chart_code
        self.set_class(False, "running")
        self.set_class(failed, "failed")
        self.elapsed = elapsed_s
        if self.is_mounted:
            self._render_row()

    def _render_row(self) -> None:
        args = json.dumps(self.args, ensure_ascii=False)
        args = args if len(args) <= 60 else args[:59] + "…"
        if self.outcome is None:
            self.update(
                Text.assemble(
                    (f"{SPINNER[self.frame % len(SPINNER)]} ", "yellow"),
                    (self.title, "bold"),
                    f" {args}",
                )
            )
            return
        mark, style = ("✗", "red") if self.failed else ("✓", "green")
        hint = f"  [点击或 /chart {self.chart_code} 看 K 线]" if self.chart_code else ""
        self.update(
            Text.assemble(
                (f"{mark} ", style),
                (self.title, "bold"),
                f" {args}  ",
                (self.outcome, "red" if self.failed else "dim"),
                (f"  {self.elapsed:.1f}s", "dim"),
                (hint, "cyan"),
            )
        )

    def on_click(self) -> None:
        if self.chart_code:
            self.post_message(self.Selected(self))


class StatusBar(Static):
    """Model, context use, tokens, cost and data source (with a DEMO badge)."""

    def show(
        self,
        model: str,
        on_fallback: bool,
        context_pct: float,
        usage: dict[str, Any],
        source: str,
        memories: int = 0,
        routine: str = "",
    ) -> None:
        cost = usage.get("cost")
        parts: list[tuple[str, str] | str] = [(f" {model}", "bold")]
        if on_fallback:
            parts.append((" (备用)", "yellow"))
        parts += [
            f" │ 上下文 {context_pct:.0f}%",
            f" │ 入 {usage.get('input_tokens', 0):,} 出 {usage.get('output_tokens', 0):,} 缓存 {usage.get('cache_read_tokens', 0):,}",
            f" │ {'费用 ' + format(cost, '.4f') if cost is not None else '未定价'}",
            f" │ 数据 {source} ",
        ]
        if memories:
            parts.insert(-1, f" │ 记忆 {memories}")
        if routine:  # alerts and approvals the scheduled runs left
            parts.insert(-1, (f" │ {routine}", "yellow"))
        if source == "demo":
            parts.append((" DEMO 演示数据 ", "bold white on dark_red"))
        self.update(Text.assemble(*parts))


class TaskLine(Vertical):
    def __init__(self, task_id: str, tool: str) -> None:
        super().__init__(classes="task-line", id=f"task-{task_id}")
        self.label = Static(Text(tool))
        self.bar = ProgressBar(total=1.0, show_eta=False)

    def compose(self):
        yield self.label
        yield self.bar

    def show(self, event: dict[str, Any]) -> None:
        self.label.update(Text(f"⏳ {event['tool']} · {event['stage']} {event['detail']}".strip()))
        if event.get("progress") is not None:
            self.bar.update(progress=float(event["progress"]))


class BackgroundPanel(Vertical):
    """Running background tasks with their stage and progress; hidden when there are none."""

    def on_mount(self) -> None:
        self.display = False

    def update_task(self, event: dict[str, Any]) -> None:
        task_id = event["task_id"]
        existing = self.query(f"#task-{task_id}")
        if event["status"] != "running":
            existing.remove()
            self.display = len(self.query(TaskLine)) > len(existing)
            return
        if existing:
            existing.first(TaskLine).show(event)
        else:
            line = TaskLine(task_id, event["tool"])
            self.mount(line)
            self.call_after_refresh(line.show, event)
        self.display = True


class PromptInput(TextArea):
    """Enter sends; Ctrl+J (or Alt+Enter) inserts a newline; Up/Down walk the input history;
    Tab completes a slash command."""

    BINDINGS = [
        Binding("ctrl+j", "newline", "换行", show=False),
        Binding("alt+enter", "newline", show=False),
    ]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, commands: list[str]) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.commands = commands
        self.input_history: list[str] = []
        self.history_index: int | None = None

    async def _on_key(self, event) -> None:
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            text = self.text.strip()
            if text:
                self.input_history.append(text)
                self.history_index = None
                self.clear()
                self.post_message(self.Submitted(text))
            return
        if event.key == "tab" and self.text.startswith("/"):
            event.prevent_default()
            event.stop()
            matches = [c for c in self.commands if c.startswith(self.text.strip())]
            if matches:
                self.load_text(matches[0] + " ")
                self.move_cursor(self.document.end)
            return
        if event.key in ("up", "down") and self.input_history and self._at_edge(event.key):
            event.prevent_default()
            event.stop()
            self._walk_history(-1 if event.key == "up" else 1)
            return
        await super()._on_key(event)

    def _at_edge(self, key: str) -> bool:
        row = self.cursor_location[0]
        return row == 0 if key == "up" else row == self.document.line_count - 1

    def _walk_history(self, step: int) -> None:
        index = len(self.input_history) if self.history_index is None else self.history_index
        index = max(0, min(len(self.input_history), index + step))
        self.history_index = index
        self.load_text(self.input_history[index] if index < len(self.input_history) else "")
        self.move_cursor(self.document.end)

    def action_newline(self) -> None:
        self.insert("\n")
