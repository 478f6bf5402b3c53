"""The Textual app: the screen, the agent's turns and updates, approvals, sessions and charts.

The agent's turn runs in a thread worker and its out-of-turn updates are read by another;
both post every event as one message type, shown by the transcript (transcript.py) or, for
background updates and requests for the user, here. Slash commands: commands.py. Nothing in
the agent touches a widget. `create_app` is shared by the CLI and the tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import CommandPalette
from textual.message import Message
from textual.widget import AwaitMount
from textual.widgets import Static

from wyckoff.cli.messages import shown_text
from wyckoff.cli.tui.commands import BY_NAME, COMMANDS
from wyckoff.cli.tui.screens import (
    ApprovalScreen,
    AskUserScreen,
    ChartScreen,
    ResumeScreen,
    SetupScreen,
)
from wyckoff.cli.tui.transcript import Transcript
from wyckoff.cli.tui.widgets import (
    LOADING_AGENT,
    WAITING_FOR_MODEL,
    BackgroundPanel,
    ChatView,
    Notice,
    PromptInput,
    StatusBar,
    ToolRow,
    UserMessage,
    WaitingRow,
)
from wyckoff.config import effective_config

if TYPE_CHECKING:
    from wyckoff.cli.agent import Agent

TEXT_FLUSH_S = 0.1
WELCOME = "Wyckoff · A 股威科夫投研智能体。输入问题后回车；/help 查看命令；Esc 取消当前回答；Ctrl+Q 退出。"


class RuntimeEventPosted(Message):
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
        self.agent: Agent | None = None
        self.turn_running = False
        self.pending_notifications = False
        self.transcript = Transcript(self)
        self.data_source = "?"
        self.queued_text: str | None = None
        self.loading_agent = False
        self._waiting: WaitingRow | None = None
        # the agent's updates outside the turn's transcript, by event type
        self._out_of_turn: dict[str, Callable[[dict[str, Any]], None]] = {
            "task_update": self._task_updated,
            "approval_request": self._ask_approval,
            "question": self._ask_question,
        }

    # --- layout and start -----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield BackgroundPanel(id="background")
        yield ChatView(Static(WELCOME, classes="notice"), id="chat")
        yield PromptInput([command.name for command in COMMANDS])
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
                interactive=True,
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
        from wyckoff.routine.notices import opening_notices
        from wyckoff.store import Store

        self.agent, self.data_source, self.loading_agent = agent, source, False
        self.end_waiting()
        self._relay_updates()
        for line in agent.skills.warnings + agent.skills.notices + agent.mcp_warnings:
            self.show_notice(line, error=line not in agent.skills.notices)
        for line in opening_notices(Store.in_home(agent.home)):  # what scheduled runs left
            self.show_notice(line)
        self.query_one(PromptInput).commands = [
            *(command.name for command in COMMANDS),
            *(f"/{name}" for name in agent.skills.skills),
        ]
        self.transcript.show_history(agent)
        self.refresh_status()
        if self.queued_text:
            text, self.queued_text = self.queued_text, None
            self.dispatch_text(text)

    @work(thread=True, group="updates")
    def _relay_updates(self) -> None:
        """The agent's out-of-turn events (background updates, approvals, questions) reach
        the same handler as the turn's; the loop ends when the agent closes."""
        for update in self.agent.updates():
            self.post_message(RuntimeEventPosted(update))

    # --- prompt and commands -------------------------------------------------------------

    @on(PromptInput.Submitted)
    def on_prompt(self, message: PromptInput.Submitted) -> None:
        self.dispatch_text(message.text)

    def dispatch_text(self, text: str) -> None:
        if self.agent is None and self.loading_agent:
            self.queued_text = text  # handled as soon as the agent is ready
            self.show_notice("正在加载，加载完成后自动处理你的输入。")
        elif text.startswith("/") and _works_without_agent(text):
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
            self.query_one("#prompt", PromptInput).load_text(text)  # not lost: sent later
            self.show_notice(
                "上一个回答还在进行中；你的问题留在输入框里，回答结束（或按 Esc 取消）后再发送。",
                error=True,
            )
            return
        message = self.agent.skills.user_message(text)
        self.mount_chat(UserMessage(shown_text(message)))
        self.agent.conversation.append(message)
        self.run_turn()

    def run_command(self, text: str) -> None:
        """A slash command from the table, else a skill (`/name ...`) sent as the message."""
        from wyckoff.errors import WyckoffError

        name, _, arg = text.partition(" ")
        try:
            if name in BY_NAME:
                BY_NAME[name].run(self, arg.strip())
            elif self.agent is not None:
                self.send(text)
        except WyckoffError as exc:
            self.show_notice(exc.message, error=True)

    def get_system_commands(self, screen):
        """The Ctrl+P palette: every slash command, model and skill, in Chinese (Textual's own
        English entries are left out). Choosing one does what typing it would do."""
        for command in COMMANDS:
            title = f"{command.name} {command.description}"
            if command.takes_argument:
                yield SystemCommand(
                    title,
                    "填入输入框，补上参数后回车",
                    lambda c=command.name: self.fill_prompt(f"{c} "),
                )
            else:
                yield SystemCommand(title, "命令", lambda c=command.name: self.dispatch_text(c))
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
        self.transcript.new_turn()
        self._worker_turn()

    @work(thread=True, exclusive=True, group="turn")
    def _worker_turn(self) -> None:
        """Run the turn; text deltas are coalesced for up to TEXT_FLUSH_S so a fast stream
        costs a few screen updates, not one per token."""
        pending, last_flush = "", time.monotonic()
        try:
            for event in self.agent.run_turn():
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
            await self._show(message.event)
        except Exception as exc:  # a display bug must never end the session with a traceback
            self._report_display_error(exc)
            if message.event["type"] == "done":
                self.turn_running = False

    def _report_display_error(self, exc: Exception) -> None:
        """A short line for the user; the details go to the turn's trace for the bug report."""
        import traceback

        if self.agent is not None:
            self.agent.record_front_end_error(repr(exc), traceback.format_exc())
        self.show_notice(
            f"显示出错（{type(exc).__name__}），详情已写入追踪：wyckoff trace list", error=True
        )

    async def _show(self, event: dict[str, Any]) -> None:
        handler = self._out_of_turn.get(event["type"])
        if handler is not None:
            handler(event)
        else:
            await self.transcript.show(event)

    def turn_done(self, event: dict[str, Any]) -> None:
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

    def action_help_quit(self) -> None:
        """Ctrl+C does not quit (it copies in the prompt): say how to, in Chinese."""
        self.notify("按 Ctrl+Q 退出；Esc 取消当前回答。", title="要退出吗？")

    def action_cancel_turn(self) -> None:
        if self.turn_running and self.agent is not None:
            self.agent.cancel()

    # --- background tasks ----------------------------------------------------------------

    def _task_updated(self, event: dict[str, Any]) -> None:
        self.query_one(BackgroundPanel).update_task(event)
        if event["status"] != "running":
            self.pending_notifications = True
            if not self.turn_running:
                self.continue_with_notifications()

    def continue_with_notifications(self) -> None:
        """A finished background task starts a new agent turn on its own."""
        self.pending_notifications = False
        if not self.agent.take_notifications():
            return
        self.show_notice("后台任务已完成，继续分析……")
        self.run_turn()

    # --- approvals ---------------------------------------------------------------------------

    def _ask_approval(self, event: dict[str, Any]) -> None:
        request, answer = event["request"], event["answer"]

        def answered(approval) -> None:
            if approval.decision == "deny":  # its row says so, not the text written for the model
                self.transcript.denied_calls.add(request["id"])
            _resolve(answer)(approval)

        self.push_screen(ApprovalScreen(request), answered)

    def _ask_question(self, event: dict[str, Any]) -> None:
        self.push_screen(AskUserScreen(event["question"]), _resolve(event["answer"]))

    def on_unmount(self) -> None:
        if self.agent is not None:
            self.agent.close()  # a dialog still open is answered "deny" / "skipped"

    # --- sessions, models, charts -----------------------------------------------------------

    def action_new_chat(self) -> None:
        if self.turn_running:
            self.show_notice("请先按 Esc 取消当前回答。", error=True)
            return
        if self._switch_session("new"):
            self.action_clear_screen()
            self.show_notice("新对话已开始。")

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
        if session_id and self._switch_session("resume", session_id):
            self.action_clear_screen()
            self.transcript.show_history(self.agent)
            self.show_notice(f"已恢复会话 {session_id}。")

    def fork(self) -> None:
        new_id = self._switch_session("fork")
        if new_id:
            self.show_notice(f"已分出新会话 {new_id}，之后的对话保存在新会话中。")

    def _switch_session(self, choice, session_id: str | None = None) -> str | None:
        """The new session's id, or None when it could not be opened (said in the chat). The
        status bar then shows that session's own context and usage, as /token does."""
        from wyckoff.errors import WyckoffError

        try:
            new_id = self.agent.switch_session(choice, session_id)
        except WyckoffError as exc:  # e.g. the session is busy in another process
            self.show_notice(exc.message, error=True)
            return None
        self.refresh_status()
        return new_id

    def open_chart(self, argument: str) -> None:
        words = argument.split()
        intraday = "--intraday" in words
        code = " ".join(w for w in words if w != "--intraday")
        if not code:
            self.show_notice("用法：/chart 600519（分时：/chart 600519 --intraday）", error=True)
            return
        # one bar per column of the widest chart the screen allows
        self._load_chart(code, intraday, days=max(120, self.size.width))

    @work(thread=True, exclusive=True, group="chart")
    def _load_chart(self, code: str, intraday: bool, days: int) -> None:
        """Off the UI thread: a cold panel or a day's minute bars from the data source can
        take seconds, and the prompt stays usable meanwhile. A newer /chart replaces it."""
        from textual.worker import get_current_worker

        from wyckoff.errors import WyckoffError

        try:
            data = self.agent.intraday_chart(code) if intraday else self.agent.chart(code, days)
        except WyckoffError as exc:
            self.call_from_thread(self.show_notice, exc.message, True)
            return
        if not get_current_worker().is_cancelled:
            self.call_from_thread(lambda: self.push_screen(ChartScreen(data)))

    @on(ToolRow.Selected)
    def on_tool_row_selected(self, message: ToolRow.Selected) -> None:
        self.open_chart(message.row.chart_code)

    # --- rendering helpers -----------------------------------------------------------------

    def mount_chat(self, widget) -> AwaitMount:
        chat = self.query_one("#chat", ChatView)
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

    def refresh_status(self) -> None:
        if self.agent is None:
            return
        self.data_source = self.current_data_source()
        status = self.agent.status()
        self.query_one(StatusBar).show(
            status.model_id,
            status.on_fallback,
            status.context_used / status.context_window * 100,
            status.usage,
            self.data_source,
            status.memories,
            self.routine_status(),
        )

    def routine_status(self) -> str:
        from wyckoff.routine.notices import status_text
        from wyckoff.store import Store

        assert self.agent is not None
        return status_text(Store.in_home(self.agent.home))

    def current_data_source(self) -> str:
        """Read again each time: `wyckoff data use` in another terminal switches the tools too."""
        from wyckoff.config import load_config
        from wyckoff.engine.sources.choice import resolve_source
        from wyckoff.errors import WyckoffError

        try:
            return resolve_source(load_config())
        except WyckoffError:  # a broken config is reported by the next command; keep the last
            return self.data_source


def _works_without_agent(text: str) -> bool:
    command = BY_NAME.get(text.split()[0])
    return command is not None and command.without_agent


def _resolve(answer: Future) -> Callable[[Any], None]:
    """The dialog's answer for the waiting turn (unless the agent closed meanwhile)."""

    def resolve(result: Any) -> None:
        if not answer.done():
            answer.set_result(result)

    return resolve


def create_app(
    model_id: str | None = None, session_id: str | None = None, continue_latest: bool = False
) -> WyckoffApp:
    return WyckoffApp(model_id=model_id, session_id=session_id, continue_latest=continue_latest)
