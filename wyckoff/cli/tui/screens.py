"""Modal screens: approval, ask_user, chart, resume, first-run setup."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from wyckoff.cli.output import local_time
from wyckoff.cli.runtime import Approval
from wyckoff.cli.tui.intraday import IntradayChart
from wyckoff.cli.tui.kline import KLineChart
from wyckoff.cli.visible_text import visible

EDIT_LABEL = "修改参数 (e)"
RUN_EDITED_LABEL = "按修改执行 (y)"  # once edited, y runs the edited arguments (see answer)


class ApprovalScreen(ModalScreen[Approval]):
    """Allow once / always this session / run with edited arguments / deny.

    The action is shown as a sentence above its arguments; focus starts on the buttons
    (on "拒绝", so a stray Enter never approves) and single keys answer — once the dialog
    has been up for ARM_DELAY_S, so letters still being typed for the prompt when it
    appears ("a" of "analyze") answer nothing.
    """

    AUTO_FOCUS = "#deny"
    ARM_DELAY_S = 0.5
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # buttons in two rows, or one
    BINDINGS = [
        Binding("y", "answer('allow')", "允许一次"),
        Binding("a", "answer('always')", "总是允许"),
        Binding("e", "edit", "修改参数"),
        Binding("n", "answer('deny')", "拒绝"),
        Binding("escape", "escape", "拒绝"),
    ]

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__()
        self.request = request
        self.armed = False

    def on_mount(self) -> None:
        self.set_timer(self.ARM_DELAY_S, self.arm)
        self.call_after_refresh(self.fit_to_screen)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_to_screen)

    def fit_to_screen(self) -> None:
        """The body (detail and arguments) gets the rows the title, the sentence and the
        buttons leave, and scrolls within them: those stay in view at 80×24, and the
        arguments' box fits whole when it is scrolled to."""
        dialog, body = self.query_one("#dialog"), self.query_one("#approval-body")
        chrome = dialog.outer_size.height - dialog.size.height
        fixed = sum(
            child.outer_size.height + child.styles.margin.height
            for child in dialog.children
            if child is not body and child.display
        )
        rows = max(4, self.size.height - chrome - fixed)
        body.styles.max_height = rows
        self.query_one("#args").styles.max_height = rows - 1  # under its hint line

    def arm(self) -> None:
        """From now on y/a/e answer the dialog."""
        self.armed = True

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="approval"):
            yield Label(
                Text.assemble(
                    ("需要你的批准：", "bold"), self.request["title"], f"（{self.request['name']}）"
                )
            )
            sentence, _, detail = self.request["description"].partition("\n")
            yield action_sentence(sentence)
            # only this part gives way on a small screen: the sentence and buttons stay in view
            with VerticalScroll(id="approval-body"):
                if detail:  # a command's parts or a write's diff, scrolled in its own box
                    with VerticalScroll(id="action-detail"):
                        yield Static(detail_text(detail))
                yield Static(
                    "参数（按 e 修改，改完按 Esc 回到按钮，再按 y 或选“按修改执行”）：",
                    classes="hint",
                )
                yield TextArea(raw_arguments(self.request["args"]), language="json", id="args")
            yield Static("", id="error", classes="error")
            with Grid(id="buttons"):
                yield Button("允许一次 (y)", id="allow", variant="success")
                always = self.request.get("always_label") or "本会话总是允许"
                yield Button(Text(f"{always} (a)"), id="always")
                yield Button(EDIT_LABEL, id="edit")
                yield Button("拒绝 (n/Esc)", id="deny", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "edit" and not self.edited():
            self.query_one("#args", TextArea).focus()
        elif event.button.id == "edit":
            self.run_edited()
        else:
            self.answer(event.button.id)  # allow / always / deny

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The sentence follows the edited arguments: what is approved is what is described.
        The edit button says what it (and its key) now does: edit, or run the edit."""
        self.query_one("#edit", Button).label = RUN_EDITED_LABEL if self.edited() else EDIT_LABEL
        describe = self.request.get("describe")
        try:
            args = json.loads(event.text_area.text)
        except ValueError:
            return
        if describe is not None and isinstance(args, dict):
            sentence = describe(args).partition("\n")[0]
            self.query_one("#action", Static).update(action_sentence_text(sentence))

    def run_edited(self) -> None:
        try:
            args = json.loads(self.query_one("#args", TextArea).text)
            if not isinstance(args, dict):
                raise ValueError
        except ValueError:
            self.query_one("#error", Static).update("参数不是合法的 JSON 对象，请修改后再试。")
            return
        self.dismiss(Approval("edit", args))

    def action_answer(self, decision: str) -> None:
        if self.armed or decision == "deny":
            self.answer(decision)

    def answer(self, decision: str) -> None:
        """Once the arguments are edited, what runs is what the sentence now describes:
        "allow" runs the edited arguments, and "always" (for the original call) is refused."""
        if decision == "deny" or not self.edited():
            self.dismiss(Approval(decision))  # type: ignore[arg-type]
        elif decision == "allow":
            self.run_edited()
        else:
            self.query_one("#error", Static).update(
                "参数已修改：“总是允许”只用于原始参数；按 y 或“按修改执行”运行修改后的参数。"
            )

    def edited(self) -> bool:
        try:
            return json.loads(self.query_one("#args", TextArea).text) != self.request["args"]
        except ValueError:
            return True

    def action_edit(self) -> None:
        if self.armed:
            self.query_one("#args", TextArea).focus()

    def action_escape(self) -> None:
        """Esc leaves the editor first; on the buttons it denies."""
        if isinstance(self.focused, TextArea):
            self.query_one("#edit", Button).focus()
        else:
            self.dismiss(Approval("deny"))


def raw_arguments(args: dict[str, Any]) -> str:
    """Arguments as editable JSON; a hidden character in a string shows as its \\u escape,
    which JSON reads back as the same character."""
    return visible(json.dumps(args, ensure_ascii=False, indent=2), keep_newlines=True)


def action_sentence(description: str) -> Static:
    """The action a consent would allow, as the dialog's most visible line."""
    return Static(action_sentence_text(description), id="action")


def action_sentence_text(description: str) -> Text:
    return Text.assemble(("将要执行：", "bold"), description)


DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def detail_text(detail: str) -> Text:
    """The lines under an action sentence; a diff's added and removed lines coloured."""
    text = Text()
    for number, line in enumerate(detail.splitlines()):
        text.append(("\n" if number else "") + line, style=DIFF_STYLES.get(line[:1], ""))
    return text


class AskUserScreen(ModalScreen[dict]):
    """A question from the model. When the question asks consent for an action, the action
    itself is shown as a sentence (F2 shows its raw arguments): "是" consents to that only."""

    AUTO_FOCUS = "#free-text"  # typing answers at once; a stray Enter never picks an option
    BINDINGS = [
        Binding("escape", "skip", "跳过"),
        Binding("f2", "toggle_args", "原始参数"),
    ]

    def __init__(self, question: dict[str, Any]) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        action = self.question.get("action")
        with Vertical(id="dialog"):
            yield Label(Text(self.question["question"], style="bold"))
            if action:
                yield action_sentence(self.question["action_description"])
                yield Static("同意的回答只批准上面这一个操作。F2 查看原始参数。", classes="hint")
                yield Static(raw_arguments(action), id="raw-args", classes="hint")
            with Horizontal(id="buttons"):
                for index, option in enumerate(self.question.get("options") or []):
                    yield Button(option, id=f"option-{index}")
            if self.question.get("allow_free_text", True):
                yield Input(placeholder="或者输入你的回答，回车提交", id="free-text")

    def on_mount(self) -> None:
        for raw in self.query("#raw-args"):
            raw.display = False

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss({"status": "answered", "answer": str(event.button.label)})

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss({"status": "answered", "answer": event.value.strip()})

    def action_skip(self) -> None:
        self.dismiss({"status": "skipped", "answer": ""})

    def action_toggle_args(self) -> None:
        for raw in self.query("#raw-args"):
            raw.display = not raw.display


class ChartScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "关闭"), Binding("q", "dismiss", "关闭")]

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__()
        self.data = data

    def compose(self) -> ComposeResult:
        with Vertical(id="chart-dialog"):
            if self.data.get("kind") == "intraday":
                yield IntradayChart(self.data, id="chart")
            else:
                yield KLineChart(self.data, id="chart")
            yield Static("Esc 关闭", classes="hint")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class ResumeScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "取消")]
    AUTO_FOCUS = "#sessions"  # ↓ and Enter work at once, no Tab first

    def __init__(
        self,
        sessions: list[dict[str, Any]],
        heading: str = "选择要恢复的会话（回车确认，Esc 取消）",
    ) -> None:
        super().__init__()
        self.sessions, self.heading = sessions, heading

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.heading)
            yield OptionList(
                *[
                    Option(
                        # the count first: a long title wraps after it, never between 31 and 条
                        f"{local_time(s['updated_at'], seconds=False)} · {s['messages']} 条  "
                        f"{s['title'] or '(无标题)'}",
                        id=s["id"],
                    )
                    for s in self.sessions
                ],
                id="sessions",
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


SETUP_LEFT = (
    "没有添加模型，已退出。可以用 `wyckoff model add` 添加模型，"
    "或设置 ANTHROPIC_API_KEY 等环境变量后再运行 wyckoff。"
)


def looks_like_env_name(key: str) -> bool:
    """An API-key field value that names an environment variable rather than being the key."""
    return key.isupper() and " " not in key and len(key) < 64


class SetupScreen(ModalScreen[bool]):
    """First run with no model: add one with the same validation as `wyckoff model add`.
    Esc, Ctrl+C and Ctrl+Q leave Wyckoff: without a model there is nothing to go back to."""

    BINDINGS = [
        Binding("escape", "leave", "退出", show=False),
        Binding("ctrl+c", "leave", "退出", show=False, priority=True),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("欢迎使用 Wyckoff！先添加一个模型。", style="bold"))
            yield Static(
                "Esc 退出；也可以退出后设置 ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY / DEEPSEEK_API_KEY 再启动。",
                classes="hint",
            )
            yield Select(
                [
                    ("Claude (Anthropic)", "claude"),
                    ("OpenAI 兼容（OpenAI、DeepSeek、Qwen、Kimi、Ollama）", "openai"),
                    ("Gemini", "gemini"),
                ],
                prompt="选择 provider",
                id="provider",
            )
            yield Input(placeholder="模型 id（自己起的名字，如 main）", value="main", id="model-id")
            yield Input(placeholder="模型名，如 claude-sonnet-4-5、deepseek-chat", id="model")
            yield Input(placeholder="base_url（可选，兼容端点才需要）", id="base-url")
            yield Input(placeholder="API key 所在的环境变量名（推荐），或直接粘贴 key", id="key")
            yield Static("", id="error", classes="error")
            with Horizontal(id="buttons"):
                yield Button("保存", id="save", variant="success")
                yield Button("退出", id="quit")

    def on_mount(self) -> None:
        self.query_one("#provider", Select).focus()  # typing starts in the first field

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "key":  # a pasted key is masked; a variable name stays readable
            key = event.value.strip()
            event.input.password = bool(key) and not looks_like_env_name(key)

    def action_leave(self) -> None:
        self.app.exit(message=SETUP_LEFT)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "quit":
            self.action_leave()
            return
        from wyckoff.config import config_lock, load_config, save_config, wyckoff_home
        from wyckoff.errors import ConfigError

        value = lambda widget_id: self.query_one(f"#{widget_id}", Input).value.strip() or None  # noqa: E731
        provider = self.query_one("#provider", Select).value
        key = value("key") or ""
        home = wyckoff_home()
        try:
            with config_lock(home):
                config = load_config(home).upsert_model(
                    value("model-id") or "",
                    make_default=True,
                    provider=None if provider is Select.BLANK else provider,
                    model=value("model"),
                    base_url=value("base-url"),
                    **(
                        {"api_key_env": key}
                        if looks_like_env_name(key)
                        else {"api_key": key or None}
                    ),
                )
                save_config(config, home)
        except ConfigError as exc:
            self.query_one("#error", Static).update(exc.message)
            return
        self.dismiss(True)
