"""Modal screens: approval, ask_user, chart, resume, first-run setup."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from wyckoff.cli.runtime import Approval
from wyckoff.cli.tui.widgets import KLineChart


class ApprovalScreen(ModalScreen[Approval]):
    """Allow once / always this session / run with edited arguments / deny."""

    BINDINGS = [Binding("escape", "deny", "拒绝")]

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__()
        self.request = request

    @staticmethod
    def default_result() -> Approval:
        return Approval("deny")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(
                Text.assemble(
                    ("需要你的批准：", "bold"), self.request["title"], f"（{self.request['name']}）"
                )
            )
            yield Static("参数（可修改后选择“按修改执行”）：", classes="hint")
            yield TextArea(
                json.dumps(self.request["args"], ensure_ascii=False, indent=2),
                language="json",
                id="args",
            )
            yield Static("", id="error", classes="error")
            with Horizontal(id="buttons"):
                yield Button("允许一次", id="allow", variant="success")
                yield Button("本会话总是允许", id="always")
                yield Button("按修改执行", id="edit")
                yield Button("拒绝", id="deny", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "edit":
            try:
                args = json.loads(self.query_one("#args", TextArea).text)
                if not isinstance(args, dict):
                    raise ValueError
            except ValueError:
                self.query_one("#error", Static).update("参数不是合法的 JSON 对象，请修改后再试。")
                return
            self.dismiss(Approval("edit", args))
        else:
            self.dismiss(Approval(event.button.id))  # allow / always / deny

    def action_deny(self) -> None:
        self.dismiss(Approval("deny"))


class AskUserScreen(ModalScreen[dict]):
    BINDINGS = [Binding("escape", "skip", "跳过")]

    def __init__(self, question: dict[str, Any]) -> None:
        super().__init__()
        self.question = question

    @staticmethod
    def default_result() -> dict[str, Any]:
        return {"status": "skipped", "answer": ""}

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(self.question["question"], style="bold"))
            with Horizontal(id="buttons"):
                for index, option in enumerate(self.question.get("options") or []):
                    yield Button(option, id=f"option-{index}")
            if self.question.get("allow_free_text", True):
                yield Input(placeholder="或者输入你的回答，回车提交", id="free-text")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss({"status": "answered", "answer": str(event.button.label)})

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss({"status": "answered", "answer": event.value.strip()})

    def action_skip(self) -> None:
        self.dismiss({"status": "skipped", "answer": ""})


class ChartScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "关闭"), Binding("q", "dismiss", "关闭")]

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__()
        self.data = data

    def compose(self) -> ComposeResult:
        with Vertical(id="chart-dialog"):
            yield KLineChart(self.data, id="chart")
            yield Static("Esc 关闭", classes="hint")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class ResumeScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "取消")]
    AUTO_FOCUS = "#sessions"  # ↓ and Enter work at once, no Tab first

    def __init__(self, sessions: list[dict[str, Any]]) -> None:
        super().__init__()
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("选择要恢复的会话（回车确认，Esc 取消）")
            yield OptionList(
                *[
                    Option(
                        f"{s['updated_at'][:16]}  {s['title'] or '(无标题)'}  · {s['messages']} 条",
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

    def action_leave(self) -> None:
        self.app.exit(message=SETUP_LEFT)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "quit":
            self.action_leave()
            return
        from pydantic import ValidationError

        from wyckoff.config import (
            ModelConfig,
            describe_validation_error,
            load_config,
            save_config,
            wyckoff_home,
        )

        value = lambda widget_id: self.query_one(f"#{widget_id}", Input).value.strip() or None  # noqa: E731
        provider = self.query_one("#provider", Select).value
        key = value("key") or ""
        fields = {
            "id": value("model-id"),
            "provider": None if provider is Select.BLANK else provider,
            "model": value("model"),
            "base_url": value("base-url"),
            **(
                {"api_key_env": key}
                if key.isupper() and " " not in key and len(key) < 64
                else {"api_key": key or None}
            ),
        }
        try:
            model = ModelConfig.model_validate({k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            self.query_one("#error", Static).update(f"参数有误：{describe_validation_error(exc)}")
            return
        home = wyckoff_home()
        config = load_config(home)
        save_config(
            config.model_copy(
                update={
                    "models": [*[m for m in config.models if m.id != model.id], model],
                    "default": model.id,
                }
            ),
            home,
        )
        self.dismiss(True)
