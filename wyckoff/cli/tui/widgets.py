"""Widgets of the chat screen: messages, tool rows, notices, the status bar, the background
panel and the prompt (sub-agent blocks: delegation.py; the K-line chart: kline.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, ProgressBar, Static, TextArea

from wyckoff.cli.tui.wrap import WrappedMarkdown, WrappedStatic

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WAITING_FOR_MODEL = "等待模型回复"
LOADING_AGENT = "正在加载模型与工具"


@dataclass(frozen=True)
class ScrollAnchor:
    """What the chat shows at its top: a message and how far down it, at a width."""

    widget: Widget | None  # None: the view is at the end
    fraction: float
    width: int


class ChatView(VerticalScroll):
    """The chat. A resize reflows every message; the view then shows the same content at
    its top as before (or stays at the end), not the same line number."""

    def __init__(self, *children: Widget, id: str) -> None:
        super().__init__(*children, id=id)
        self.anchor_at: ScrollAnchor | None = None

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.anchor_at is None or self.anchor_at.width == self.size.width:
            self.anchor_at = self._top_anchor()  # not mid-resize, when the line is stale

    def _top_anchor(self) -> ScrollAnchor:
        width = self.size.width
        if self.scroll_y >= self.max_scroll_y:
            return ScrollAnchor(None, 0.0, width)
        for child in self.children:
            region = child.virtual_region_with_margin
            if region.bottom > self.scroll_y:
                offset = self.scroll_y - region.y
                return ScrollAnchor(child, offset / max(region.height, 1), width)
        return ScrollAnchor(None, 0.0, width)

    def on_resize(self) -> None:
        self.call_after_refresh(self._keep_anchor)

    def _keep_anchor(self) -> None:
        anchor, self.anchor_at = self.anchor_at, None
        if anchor is None or anchor.widget is None or anchor.widget.parent is not self:
            self.scroll_end(animate=False, immediate=True)
        else:
            region = anchor.widget.virtual_region_with_margin
            self.scroll_to(
                y=round(region.y + anchor.fraction * region.height), animate=False, immediate=True
            )
        self.anchor_at = self._top_anchor()


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Text(text), classes="user-message")


class AssistantMessage(WrappedMarkdown):
    """The answer, streamed as Markdown."""

    def __init__(self) -> None:
        super().__init__("", classes="assistant-message")
        self.text = ""


class ThinkingBlock(Collapsible):
    """The model's reasoning, collapsed; while it streams, the title says it is thinking
    (the reasoning can run for many seconds before the first word of the answer)."""

    def __init__(self) -> None:
        self.body = WrappedStatic(classes="thinking-text")
        super().__init__(self.body, title="思考过程", collapsed=True, classes="thinking")
        self.text = ""

    def add(self, text: str) -> None:
        self.show(self.text + text)
        self.title = f"思考中…（{len(self.text)} 字）"

    def settle(self) -> None:
        """The reasoning is over (the answer, a tool call or the turn's end came)."""
        self.title = "思考过程"

    def show(self, text: str) -> None:
        self.text = text
        self.body.show_text(Text(self.text))


class Notice(WrappedStatic):
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


ERROR_SHOWN_CHARS = 300  # a whole Chinese error sentence; a runaway one is cut with "…"


def error_outcome(error: str) -> str:
    """What a failed tool's row says: the error's first line, whole, since its end says what
    to do (a sentence cut at 100 characters lost it)."""
    line = error.splitlines()[0] if error else ""
    return line if len(line) <= ERROR_SHOWN_CHARS else line[: ERROR_SHOWN_CHARS - 1] + "…"


class ToolRow(WrappedStatic):
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

    def show_args(self, args: dict[str, Any]) -> None:
        self.args = args
        if self.is_mounted:
            self._render_row()

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
        args = json.dumps(self.args, ensure_ascii=False) if self.args else ""  # no "{}"
        args = args if len(args) <= 60 else args[:59] + "…"
        if self.outcome is None:
            self.show_text(
                Text.assemble(
                    (f"{SPINNER[self.frame % len(SPINNER)]} ", "yellow"),
                    (self.title, "bold"),
                    f" {args}".rstrip(),
                )
            )
            return
        mark, style = ("✗", "red") if self.failed else ("✓", "green")
        hint = f"  [点击或 /chart {self.chart_code} 看 K 线]" if self.chart_code else ""
        self.show_text(
            Text.assemble(
                (f"{mark} ", style),
                (self.title, "bold"),
                f" {args}  " if args else "  ",
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


TASK_MARKS = {"running": "⏳", "completed": "✓", "failed": "✗", "cancelled": "·"}


class TaskLine(Vertical):
    """One background task: its Chinese title, state (排队中 → 运行中 → 完成/失败/已取消),
    stage and a progress bar that never goes backwards. Updates can arrive out of order
    (they come from the task's thread and the one that started it): an update older than
    the one shown (by the task's own `seq`) is dropped."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(classes="task-line", id=f"task-{event['task_id']}")
        self.label = WrappedStatic()
        self.bar = ProgressBar(total=1.0, show_eta=False)
        self.event = event
        self.progress = 0.0

    def compose(self):
        yield self.label
        yield self.bar

    def on_mount(self) -> None:
        self._render_task()

    def show(self, event: dict[str, Any]) -> None:
        if event["seq"] <= self.event["seq"]:
            return
        self.event = event
        if self.is_mounted:
            self._render_task()

    def _render_task(self) -> None:
        event = self.event
        self.progress = max(self.progress, event.get("progress") or 0.0)
        mark = TASK_MARKS.get(event["status"], "⏳")
        step = "" if event["status"] != "running" else f" {event['stage']} {event['detail']}"
        self.label.show_text(Text(f"{mark} {event['title']} · {event['state']}{step}".rstrip()))
        self.bar.update(progress=self.progress)


class BackgroundPanel(Vertical):
    """Background tasks with their state and progress; an ended task stays FINISHED_SHOWN_S
    with how it ended, and the panel is hidden when no task is left."""

    FINISHED_SHOWN_S = 3.0

    def on_mount(self) -> None:
        self.display = False
        self.ended: set[str] = set()  # a late update of these never brings their line back

    def update_task(self, event: dict[str, Any]) -> None:
        task_id = event["task_id"]
        if task_id in self.ended:
            return
        existing = self.query(f"#task-{task_id}")
        if existing:
            line = existing.first(TaskLine)
            line.show(event)
        else:
            line = TaskLine(event)
            self.mount(line)
        if event["status"] != "running":
            self.ended.add(task_id)
            self.set_timer(self.FINISHED_SHOWN_S, lambda: self._drop(line))
        self.display = True

    def _drop(self, line: TaskLine) -> None:
        line.remove()
        self.display = any(other is not line for other in self.query(TaskLine))


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
