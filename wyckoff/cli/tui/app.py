"""The Textual app: streaming chat over RuntimeEvents, tool rows, approvals, the background
panel, the status bar, slash commands, sessions and charts.

The runtime runs in a thread worker and posts every RuntimeEvent as a message; nothing in the
runtime touches a widget. `create_app` is shared by the CLI and the tests.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import CommandPalette
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import AwaitMount
from textual.widgets import Static

from wyckoff.cli.messages import kind_of, shown_text
from wyckoff.cli.tui.screens import (
    ApprovalScreen,
    AskUserScreen,
    ChartScreen,
    ResumeScreen,
    SetupScreen,
)
from wyckoff.cli.tui.widgets import (
    LOADING_AGENT,
    WAITING_FOR_MODEL,
    AssistantMessage,
    BackgroundPanel,
    DelegationView,
    Notice,
    PromptInput,
    StatusBar,
    ThinkingBlock,
    ToolRow,
    UserMessage,
    WaitingRow,
)
from wyckoff.config import effective_config

BUILTIN_COMMANDS = {
    "/help": "显示命令、技能和提示模板",
    "/new": "开始新对话",
    "/clear": "清屏（不影响对话历史）",
    "/model": "列出模型；后接模型 id 切换",
    "/resume": "恢复保存的会话",
    "/fork": "从当前会话分出新会话",
    "/compact": "立即压缩上下文",
    "/token": "显示上下文与用量",
    "/memory": "查看长期记忆；/memory 关键词 按召回规则搜索",
    "/chart": "打开 K 线图（后接代码或名称，如 600519）",
    "/quit": "退出",
}
COMMANDS_WITH_ARGUMENT = ("/chart",)
TEXT_FLUSH_S = 0.1
WELCOME = "Wyckoff · A 股威科夫投研智能体。输入问题后回车；/help 查看命令；Esc 取消当前回答；Ctrl+Q 退出。"


class RuntimeEventPosted(Message):
    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__()
        self.event = event


class TaskUpdated(Message):
    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__()
        self.event = event


class WyckoffApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "Wyckoff"
    AUTO_FOCUS = "#prompt"
    BINDINGS = [
        Binding("escape", "cancel_turn", "取消", show=False),
        Binding("ctrl+n", "new_chat", "新对话"),
        Binding("ctrl+l", "clear_screen", "清屏"),
        Binding("ctrl+q", "quit", "退出", priority=True),  # from any dialog too
    ]

    def __init__(
        self,
        model_id: str | None = None,
        session_id: str | None = None,
        continue_latest: bool = False,
    ) -> None:
        super().__init__()
        self.model_id, self.session_id, self.continue_latest = model_id, session_id, continue_latest
        self.agent = None
        self.turn_running = False
        self.pending_notifications = False
        self._assistant: AssistantMessage | None = None
        self._thinking: ThinkingBlock | None = None
        self._rows: dict[str, ToolRow] = {}
        self._delegations = DelegationView(self, lambda: list(self._rows))
        self.data_source = "?"
        self._waiting_workers: set[threading.Event] = set()
        self.queued_text: str | None = None
        self.loading_agent = False
        self._waiting: WaitingRow | None = None
        self._denied_calls: set[str] = set()
        self._config_stamp: int | None = None

    # --- layout and start -----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield BackgroundPanel(id="background")
        yield VerticalScroll(Static(WELCOME, classes="notice"), id="chat")
        yield PromptInput(list(BUILTIN_COMMANDS))
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        from wyckoff.config import effective_config, load_config
        from wyckoff.errors import WyckoffError

        try:
            if not effective_config(load_config()).models:
                self.push_screen(SetupScreen(), lambda saved: self.load_agent() if saved else None)
                return
        except WyckoffError as exc:
            self.show_notice(exc.message, error=True)
            return
        self.loading_agent = True  # set before the worker starts, so early input is queued
        self.load_agent()

    @work(thread=True, exclusive=True, group="agent")
    def load_agent(self, session_id: str | None = None) -> None:
        """Open the agent off the event loop: the SDK and engine imports take about a second,
        and the screen should be up (and typing possible) meanwhile."""
        from wyckoff.cli.agent import open_agent
        from wyckoff.engine.sources.choice import resolve_source
        from wyckoff.errors import WyckoffError

        self.loading_agent = True
        self.call_from_thread(self.query_one(StatusBar).update, f" {LOADING_AGENT}……")
        self.call_from_thread(self.show_waiting, LOADING_AGENT)
        try:
            agent = open_agent(
                model_id=self.model_id,
                session_id=session_id or self.session_id,
                continue_latest=self.continue_latest and not session_id,
                confirm=self._confirm_from_worker,
                ask_user=self._ask_from_worker,
            )
            source = resolve_source(agent.config)
        except WyckoffError as exc:
            self.loading_agent = False
            self.call_from_thread(self.end_waiting)
            self.call_from_thread(self.show_notice, exc.message, True)
            self.call_from_thread(self.query_one(StatusBar).update, " 没有可用的模型")
            return
        self.call_from_thread(self._agent_ready, agent, source)

    def _agent_ready(self, agent, source: str) -> None:
        self.agent, self.data_source, self.loading_agent = agent, source, False
        self.end_waiting()
        agent.runtime.on_task_update(lambda event: self.post_message(TaskUpdated(event)))
        for line in agent.skills.warnings + agent.skills.notices + agent.mcp_warnings:
            self.show_notice(line, error=line not in agent.skills.notices)
        self.query_one(PromptInput).commands = [
            *BUILTIN_COMMANDS,
            *(f"/{name}" for name in agent.skills.skills),
        ]
        self.render_history()
        self.refresh_status()
        if self.queued_text:
            text, self.queued_text = self.queued_text, None
            self.dispatch_text(text)

    # --- prompt and commands -------------------------------------------------------------

    @on(PromptInput.Submitted)
    def on_prompt(self, message: PromptInput.Submitted) -> None:
        self.dispatch_text(message.text)

    def dispatch_text(self, text: str) -> None:
        if self.agent is None and self.loading_agent:
            self.queued_text = text  # handled as soon as the agent is ready
            self.show_notice("正在加载，加载完成后自动处理你的输入。")
        elif text.startswith("/") and text.split()[0] in ("/help", "/quit", "/clear"):
            self.run_command(text)
        elif self.agent is None:
            self.show_notice(
                "还没有可用的模型：请先完成设置（或用 `wyckoff model add` 添加模型后重启）。",
                error=True,
            )
        elif text.startswith("/"):
            self.run_command(text)
        else:
            self.send(text)

    def send(self, text: str) -> None:
        """Send what the user typed (a question, or a /skill call) as the turn's message."""
        if self.turn_running:
            self.show_notice("上一个回答还在进行中；按 Esc 取消后再发送。", error=True)
            return
        message = self.agent.skills.user_message(text)
        self.mount_chat(UserMessage(shown_text(message)))
        self.agent.conversation.append(message)
        self.run_turn()

    def run_command(self, text: str) -> None:
        from wyckoff.errors import WyckoffError

        name, _, arg = text.partition(" ")
        arg = arg.strip()
        handlers = {
            "/help": self.show_help,
            "/new": self.action_new_chat,
            "/clear": self.action_clear_screen,
            "/resume": self.action_resume,
            "/fork": self.fork,
            "/compact": self.compact,
            "/token": self.show_tokens,
            "/quit": self.exit,
        }
        try:
            if name in handlers:
                handlers[name]()
            elif name == "/model":
                self.switch_model(arg)
            elif name == "/chart":
                self.open_chart(arg)
            elif name == "/memory":
                self.show_memories(arg)
            elif self.agent is not None:
                self.send(text)
        except WyckoffError as exc:
            self.show_notice(exc.message, error=True)

    def show_help(self) -> None:
        from wyckoff.cli.prompt_templates import TEMPLATES

        lines = ["**命令**", *[f"- `{c}` {d}" for c, d in BUILTIN_COMMANDS.items()]]
        if self.agent is not None:
            lines += [
                "",
                "**技能**",
                *[f"- `/{s.name}` {s.description}" for s in self.agent.skills.skills.values()],
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
        from textual.widgets import Markdown

        self.mount_chat(Markdown("\n".join(lines), classes="help"))

    def get_system_commands(self, screen):
        """The Ctrl+P palette: every slash command, model and skill, in Chinese (Textual's own
        English entries are left out). Choosing one does what typing it would do."""
        for command, description in BUILTIN_COMMANDS.items():
            if command in COMMANDS_WITH_ARGUMENT:
                yield SystemCommand(
                    f"{command} {description}",
                    "填入输入框，补上参数后回车",
                    lambda c=command: self.fill_prompt(f"{c} "),
                )
            else:
                yield SystemCommand(
                    f"{command} {description}", "命令", lambda c=command: self.dispatch_text(c)
                )
        if self.agent is None:
            return
        for model in effective_config(self.agent.config).models:
            yield SystemCommand(
                f"/model {model.id} 切换到模型 {model.id}（{model.provider} / {model.model}）",
                "模型",
                lambda m=model.id: self.dispatch_text(f"/model {m}"),
            )
        for skill in self.agent.skills.skills.values():
            yield SystemCommand(
                f"/{skill.name} {skill.description}",
                "技能",
                lambda name=skill.name: self.dispatch_text(f"/{name}"),
            )

    def action_command_palette(self) -> None:
        if not CommandPalette.is_open(self):
            self.push_screen(
                CommandPalette(placeholder="搜索命令、模型和技能…", id="--command-palette")
            )

    def fill_prompt(self, text: str) -> None:
        prompt = self.query_one(PromptInput)
        prompt.load_text(text)
        prompt.move_cursor(prompt.document.end)
        prompt.focus()

    # --- the turn ------------------------------------------------------------------------

    def run_turn(self) -> None:
        self.show_waiting(WAITING_FOR_MODEL)
        self.turn_running = True
        self._assistant = self._thinking = None
        self._worker_turn()

    @work(thread=True, exclusive=True, group="turn")
    def _worker_turn(self) -> None:
        """Run the turn; text deltas are coalesced for up to TEXT_FLUSH_S so a fast stream
        costs a few screen updates, not one per token."""
        pending, last_flush = "", time.monotonic()
        try:
            for event in self.agent.runtime.run_stream(self.agent.conversation):
                answer_text = event["type"] == "text_delta" and "agent" not in event
                if answer_text:
                    pending += event["text"]
                    if time.monotonic() - last_flush < TEXT_FLUSH_S:
                        continue
                if pending:
                    self.post_message(RuntimeEventPosted({"type": "text_delta", "text": pending}))
                    pending, last_flush = "", time.monotonic()
                if not answer_text:
                    self.post_message(RuntimeEventPosted(event))
        except Exception as exc:  # the runtime reports its own errors; this is a last guard
            self.post_message(
                RuntimeEventPosted(
                    {
                        "type": "done",
                        "status": "error",
                        "error": f"内部错误：{exc}",
                        "text": "",
                        "usage": {},
                    }
                )
            )

    async def on_runtime_event_posted(self, message: RuntimeEventPosted) -> None:
        try:
            await self._show_event(message.event)
        except Exception as exc:  # a display bug must never end the session with a traceback
            self._report_display_error(exc)
            if message.event["type"] == "done":
                self.turn_running = False

    def _report_display_error(self, exc: Exception) -> None:
        """A short line for the user; the details go to the turn's trace for the bug report."""
        import traceback

        if self.agent is not None:
            self.agent.runtime.record_front_end_error(repr(exc), traceback.format_exc())
        self.show_notice(
            f"显示出错（{type(exc).__name__}），详情已写入追踪：wyckoff trace list", error=True
        )

    async def _show_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if "agent" in event:
            await self._delegations.show(event)
            return
        if kind == "model_start":
            self.show_waiting(WAITING_FOR_MODEL)
        elif kind not in ("usage", "retry"):  # the model has answered (or the turn ended)
            self.end_waiting()
        if kind == "text_delta":
            await self._write_text(event["text"])
        elif kind == "thinking_delta":
            if self._thinking is None:
                self._thinking = ThinkingBlock()
                self.mount_chat(self._thinking)
            self._thinking.add(event["text"])
        elif kind in ("model_start", "tool_calls"):
            await self._end_text()
            self._thinking = None if kind == "model_start" else self._thinking
        elif kind == "tool_start":
            row = ToolRow(event["id"], event["name"], event["title"], event["args"])
            self._rows[event["id"]] = row
            self.mount_chat(row)
        elif kind in ("tool_result", "tool_error"):
            self._finish_row(event)
        elif kind == "retry":
            self.show_notice(f"… {event['reason']}，要求模型补调工具（第 {event['attempt']} 次）")
        elif kind == "provider_switch":
            await self._end_text(discard=True)
            self.show_notice(f"⚠ 模型 {event['from']} 不可用，已切换到备用模型 {event['to']}")
        elif kind == "compaction":
            self.show_notice(
                f"上下文已压缩：{event['before']} 条 → {event['after']} 条（原文归档 {event['archive_ref']}）"
            )
        elif kind == "usage":
            self.refresh_status()
        elif kind == "done":
            await self._end_text()
            self._on_done(event)

    async def _write_text(self, text: str) -> None:
        # Each fragment is appended and awaited before the next: Markdown.append computes what
        # to re-parse when called, so two appends in flight (as MarkdownStream.stop() can leave)
        # render a block twice. Deltas are already coalesced by the worker, so this is cheap.
        if self._assistant is None:
            self._assistant = AssistantMessage()
            await self.mount_chat(self._assistant)
        self._assistant.text += text
        await self._assistant.append(text)
        self.query_one("#chat").scroll_end(animate=False)

    async def _end_text(self, discard: bool = False) -> None:
        if discard and self._assistant is not None:
            await self._assistant.remove()
        self._assistant = None

    def _finish_row(self, event: dict[str, Any]) -> None:
        row = self._rows.get(event["id"])
        if row is None:
            return
        if event["id"] in self._denied_calls:
            row.finish("已拒绝", event["elapsed_s"], failed=True)
        elif event["type"] == "tool_error":
            row.finish(event["error"].splitlines()[0][:100], event["elapsed_s"], failed=True)
        else:
            row.finish(
                event.get("summary") or "完成", event["elapsed_s"], chart_code=chart_code_of(event)
            )

    def _on_done(self, event: dict[str, Any]) -> None:
        self.turn_running = False
        if event["status"] == "error":
            self.show_notice(f"错误：{event['error']}", error=True)
        elif event["status"] == "cancelled":
            self.show_notice("已取消本轮回答（历史已保存，可以继续提问）。")
        elif event["status"] == "max_rounds":
            self.show_notice("已达到工具调用轮数上限。", error=True)
        self.refresh_status()
        self.query_one(PromptInput).focus()
        # the answer's last blocks get their height on the next layout: keep them in view
        self.call_after_refresh(self.query_one("#chat").scroll_end, animate=False)
        if self.pending_notifications:
            self.continue_with_notifications()

    def action_cancel_turn(self) -> None:
        if self.turn_running and self.agent is not None:
            self.agent.runtime.cancel()

    # --- background tasks ----------------------------------------------------------------

    def on_task_updated(self, message: TaskUpdated) -> None:
        self.query_one(BackgroundPanel).update_task(message.event)
        if message.event["status"] != "running":
            self.pending_notifications = True
            if not self.turn_running:
                self.continue_with_notifications()

    def continue_with_notifications(self) -> None:
        """A finished background task starts a new agent turn on its own."""
        self.pending_notifications = False
        manager = self.agent.runtime.background
        notes = manager.take_notifications(self.agent.conversation.session_id)
        if not notes:
            return
        for note in notes:
            self.agent.conversation.append(note)
        self.show_notice("后台任务已完成，继续分析……")
        self.run_turn()

    # --- approvals and questions (called on the worker thread) ------------------------------

    def _confirm_from_worker(self, request: dict[str, Any]):
        approval = self._modal_from_worker(ApprovalScreen(request))
        if approval.decision == "deny":  # its row says so, not the text written for the model
            self._denied_calls.add(request["id"])
        return approval

    def _ask_from_worker(self, question: dict[str, Any]) -> dict[str, Any]:
        return self._modal_from_worker(AskUserScreen(question))

    def _modal_from_worker(self, screen):
        """Show a modal from the worker thread and wait for the answer; quitting answers
        with the modal's safe default (deny / skip) so the worker can end."""
        answered = threading.Event()
        box: dict[str, Any] = {"result": screen.default_result()}

        def on_result(result) -> None:
            box["result"] = result
            answered.set()

        self._waiting_workers.add(answered)
        try:
            self.call_from_thread(self.push_screen, screen, on_result)
            answered.wait()
        finally:
            self._waiting_workers.discard(answered)
        return box["result"]

    def on_unmount(self) -> None:
        if self.agent is not None:
            self.agent.runtime.cancel()
            self.agent.end_session(skip_layers=True)
        for waiting in list(self._waiting_workers):
            waiting.set()

    # --- sessions, models, charts -----------------------------------------------------------

    def action_new_chat(self) -> None:
        if self.turn_running:
            self.show_notice("请先按 Esc 取消当前回答。", error=True)
            return
        from wyckoff.cli.chat_log import Conversation

        self.agent.end_session()
        self.agent.conversation = Conversation.start(self.agent.chat_log)
        self.agent.runtime.new_session(self.agent.conversation.session_id)
        self.action_clear_screen()
        self.show_notice("新对话已开始。")
        self.refresh_status()

    def action_clear_screen(self) -> None:
        self.end_waiting()
        self.query_one("#chat").remove_children()

    def action_resume(self) -> None:
        sessions = self.agent.chat_log.list_sessions(30) if self.agent else []
        if not sessions:
            self.show_notice("还没有保存的会话。")
            return
        self.push_screen(ResumeScreen(sessions), self.resume)

    def resume(self, session_id: str | None) -> None:
        if not session_id:
            return
        from wyckoff.cli.chat_log import Conversation
        from wyckoff.errors import WyckoffError

        self.agent.end_session()
        try:
            self.agent.conversation = Conversation.resume(self.agent.chat_log, session_id)
        except WyckoffError as exc:  # e.g. the session is busy in another process
            self.show_notice(exc.message, error=True)
            return
        self.agent.runtime.new_session(session_id)
        self.action_clear_screen()
        self.render_history()
        self.show_notice(f"已恢复会话 {session_id}。")

    def fork(self) -> None:
        from wyckoff.cli.chat_log import Conversation

        self.agent.end_session()
        new_id = self.agent.chat_log.fork(self.agent.conversation.session_id)
        self.agent.conversation = Conversation.resume(self.agent.chat_log, new_id)
        self.agent.runtime.new_session(new_id)
        self.refresh_status()  # the branch counts its own usage, as /token says
        self.show_notice(f"已分出新会话 {new_id}，之后的对话保存在新会话中。")

    def compact(self) -> None:
        event = self.agent.runtime.compact(self.agent.conversation)
        if event is None:
            self.show_notice("没有压缩：对话太短，或摘要没有生成成功。")
        else:
            self.show_notice(
                f"上下文已压缩：{event['before']} 条 → {event['after']} 条（{event['archive_ref']}）"
            )
        self.refresh_status()

    def show_memories(self, query: str) -> None:
        from textual.widgets import Markdown

        from wyckoff.memory.recall import search

        if query:
            found = [
                (h.memory, f"（{h.pipeline} {h.score:.2f}）")
                for h in search(self.agent.memories, query)
            ]
        else:
            found = [(m, "") for m in self.agent.memories.list_memories(include_superseded=False)]
        if not found:
            self.show_notice("没有匹配的记忆。" if query else "还没有长期记忆。")
            return
        lines = [f"**长期记忆**（{len(found)} 条；`wyckoff memory trace ID` 查看来源）", ""]
        lines += [
            f"- {m.id} `{m.type}` {m.content}{note}{'（来自工具结果）' if m.is_data else ''}"
            for m, note in found
        ]
        self.mount_chat(Markdown("\n".join(lines), classes="help"))

    def show_tokens(self) -> None:
        usage = self.agent.runtime.session_usage.as_dict()
        used, window = self.context_use()
        self.show_notice(
            f"上下文约 {used:,} / {window:,} token（{used / window:.0%}）；本会话 输入 {usage['input_tokens']:,} 输出 {usage['output_tokens']:,} 缓存读 {usage['cache_read_tokens']:,} 缓存写 {usage['cache_write_tokens']:,}"
        )

    def fresh_config(self):
        """The config as on disk, re-read when the file changed: a model added in another
        shell (`wyckoff model add`) can be listed and chosen without a restart."""
        from wyckoff.config import config_path, load_config

        path = config_path(self.agent.home)
        stamp = path.stat().st_mtime_ns if path.exists() else 0
        if stamp != self._config_stamp:
            self.agent.config, self._config_stamp = load_config(self.agent.home), stamp
        return self.agent.config

    def switch_model(self, model_id: str) -> None:
        from wyckoff.cli.providers.factory import build_provider
        from wyckoff.config import effective_config

        config = self.fresh_config()
        if not model_id:
            lines = [
                f"{'* ' if m.id == self.agent.runtime.provider.name else '  '}{m.id}: {m.provider} / {m.model}"
                for m in effective_config(config).models
            ]
            self.show_notice("模型（/model ID 切换）：\n" + "\n".join(lines))
            return
        self.agent.runtime.switch_provider(build_provider(config, model_id))
        self.show_notice(f"已切换到模型 {model_id}。")
        self.refresh_status()

    def open_chart(self, code: str) -> None:
        from wyckoff.agents.stocks import kline_data
        from wyckoff.cli.tools import ToolFailure

        if not code:
            self.show_notice("用法：/chart 600519", error=True)
            return
        try:
            # one bar per column of the widest chart the screen allows
            data = kline_data(self.agent.runtime.context, code, days=max(120, self.size.width))
        except ToolFailure as exc:
            self.show_notice(exc.message, error=True)
            return
        self.push_screen(ChartScreen(data))

    @on(ToolRow.Selected)
    def on_tool_row_selected(self, message: ToolRow.Selected) -> None:
        self.open_chart(message.row.chart_code)

    # --- rendering helpers -----------------------------------------------------------------

    def render_history(self) -> None:
        observations = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in self.agent.conversation
            if m["role"] == "tool"
        }
        for message in self.agent.conversation:
            role, content = message["role"], str(message.get("content") or "")
            if role == "user" and kind_of(message) != "notification":
                self.mount_chat(UserMessage(shown_text(message)))
            elif role == "assistant" and content:
                from textual.widgets import Markdown

                self.mount_chat(Markdown(content, classes="assistant-message"))
            for call in message.get("tool_calls") or []:
                row = ToolRow(
                    call["id"],
                    call["name"],
                    self.agent.runtime.registry.title(call["name"]),
                    call.get("args") or {},
                )
                self.mount_chat(row)
                outcome, failed = self._history_outcome(call, observations.get(call["id"], ""))
                row.finish(outcome, 0.0, failed=failed)

    def _history_outcome(self, call: dict[str, Any], observation: str) -> tuple[str, bool]:
        """A resumed call's row: the tool's summary of what it returned, or that it failed
        (not the error text, which was written for the model)."""
        if observation.startswith("工具错误："):
            return "未成功（历史）", True
        # the JSON object the tool returned, also when it is stored inside a data marker
        start, end = observation.find("{"), observation.rfind("}")
        try:
            value = json.loads(observation[start : end + 1]) if start >= 0 else None
        except json.JSONDecodeError:  # a result too long to keep whole, or plain text
            value = None
        summary = self.agent.runtime.registry.summarize(call["name"], value)
        return f"{summary or '完成'}（历史）", False

    def mount_chat(self, widget) -> AwaitMount:
        chat = self.query_one("#chat", VerticalScroll)
        mounted = chat.mount(widget)
        chat.scroll_end(animate=False)
        return mounted

    def show_waiting(self, label: str) -> None:
        if self._waiting is None:
            self._waiting = WaitingRow(label)
            self.mount_chat(self._waiting)

    def end_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.remove()
            self._waiting = None

    def show_notice(self, text: str, error: bool = False) -> None:
        self.mount_chat(Notice(text, error=error))

    def context_use(self) -> tuple[int, int]:
        from wyckoff.cli.tokens import count_messages

        runtime = self.agent.runtime
        return count_messages(
            self.agent.conversation, runtime.system_prompt(), runtime.registry.schemas()
        ), runtime.provider.context_window

    def refresh_status(self) -> None:
        if self.agent is None:
            return
        self.data_source = self.current_data_source()
        provider = self.agent.runtime.provider
        used, window = self.context_use()
        on_fallback = getattr(provider, "using_fallback", False)
        self.query_one(StatusBar).show(
            provider.name,
            on_fallback,
            used / window * 100,
            self.agent.runtime.session_usage.as_dict(),
            self.data_source,
            self.agent.memories.count(),
        )

    def current_data_source(self) -> str:
        """Read again each time: `wyckoff data use` in another terminal switches the tools too."""
        from wyckoff.config import load_config
        from wyckoff.engine.sources.choice import resolve_source
        from wyckoff.errors import WyckoffError

        try:
            return resolve_source(load_config())
        except WyckoffError:  # a broken config is reported by the next command; keep the last
            return self.data_source


def chart_code_of(event: dict[str, Any]) -> str | None:
    """The stock a finished analyze_stock call was about, for its K-line hint."""
    if event["name"] != "analyze_stock":
        return None
    try:
        return json.loads(event["result"]).get("code")
    except (json.JSONDecodeError, AttributeError):
        return None


def create_app(
    model_id: str | None = None, session_id: str | None = None, continue_latest: bool = False
) -> WyckoffApp:
    return WyckoffApp(model_id=model_id, session_id=session_id, continue_latest=continue_latest)
