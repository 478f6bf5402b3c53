"""`wyckoff ask "QUESTION"`: the agent headless, for scripts and pipes.

text: the answer on stdout as it streams, tool progress on stderr.
json: one object at the end. stream-json: one RuntimeEvent per line.
Memory as in the TUI: recalled for the question; at exit, when a tool was used, one more
model call extracts memories and, when due, one refreshes playbooks and the persona (the
same gates as the TUI). `--no-memory` or `memory.extract_after_ask: false` turn that off.
Exit codes: 0 completed, 1 error, 2 usage/config error, 3 max rounds, 130 cancelled.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from wyckoff.cli.events import (
    Approved,
    Done,
    ProviderSwitch,
    RuntimeEvent,
    ToolError,
    ToolResult,
    sub_agent_of,
)
from wyckoff.cli.output import json_text, say_cancelled
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.cli.agent import Agent

EXIT_CODES = {"completed": 0, "error": 1, "max_rounds": 3, "cancelled": 130}
APPROVED_BY = {
    "approve_all": "--approve-all",
    "flag": "--approve",
    "always": "本会话总是允许",
    "consent": "用户已同意",
    "user": "用户批准",
    "edit": "用户修改后批准",
}
ARGS_PREVIEW_CHARS = 60


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class Renderer(Protocol):
    """Writes a turn's events as they come, then its end, in one output format."""

    def event(self, event: RuntimeEvent) -> None: ...

    def finish(self, done: Done | None) -> None: ...


def ask(
    question: Annotated[
        str, typer.Argument(help="问题；用 - 从标准输入读取 / the question, or - for stdin")
    ],
    model: Annotated[str | None, typer.Option("--model", "-m", help="模型 id")] = None,
    output: Annotated[
        OutputFormat, typer.Option("--output", "-o", help="text | json | stream-json")
    ] = OutputFormat.text,
    continue_latest: Annotated[
        bool, typer.Option("--continue", "-c", help="继续最近的会话")
    ] = False,
    session: Annotated[str | None, typer.Option("--session", help="继续指定会话")] = None,
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", min=1, max=100, help="最多工具往返轮数")
    ] = 15,
    approve: Annotated[
        str | None, typer.Option("--approve", help="允许这些需批准的工具，逗号分隔")
    ] = None,
    approve_all: Annotated[
        bool, typer.Option("--approve-all", help="允许所有需批准的工具")
    ] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="不等待后台任务完成")] = False,
    no_memory: Annotated[
        bool,
        typer.Option(
            "--no-memory",
            help="不使用长期记忆：不召回，结束时也不提取记忆、不更新剧本和画像（少一到两次模型调用）",
        ),
    ] = False,
) -> None:
    """无界面提问 / ask the agent headless."""
    from wyckoff.cli.agent import open_agent
    from wyckoff.cli.exit_collection import skip_exit_collection

    skip_exit_collection()

    text = _question_text(question)
    if not text.strip():
        raise UsageError("问题是空的：请给出问题，或用 `-` 从标准输入读取。")
    agent = open_agent(
        model_id=model,
        session_id=session,
        continue_latest=continue_latest,
        max_rounds=max_rounds,
        approve=[n.strip() for n in (approve or "").split(",") if n.strip()],
        approve_all=approve_all,
        use_memory=not no_memory,
    )
    for line in agent.skills.warnings + agent.skills.notices + agent.mcp_warnings:
        sys.stderr.write(line + "\n")
    agent.conversation.append(agent.skills.user_message(text))
    _cancel_on_interrupt(agent)
    renderers: dict[OutputFormat, Callable[[], Renderer]] = {
        OutputFormat.text: lambda: TextRenderer(risky_action(agent)),
        OutputFormat.json: JsonRenderer,
        OutputFormat.stream_json: StreamJsonRenderer,
    }
    render = renderers[output]()
    done: Done | None = None
    for event in agent.run_turn(wait_for_background=not no_wait):
        render.event(event)
        if event["type"] == "done" and "agent" not in event:  # the main agent's end
            done = event
    render.finish(done)
    status = done["status"] if done is not None else "error"
    if status == "completed" and not no_memory and agent.config.memory.extract_after_ask:
        agent.end_session()  # the process waits for it before exiting
    raise typer.Exit(EXIT_CODES.get(status, 1))


def _question_text(question: str) -> str:
    """The question (`-`: from stdin), refused unless it is valid UTF-8."""
    text = (
        sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if question == "-" else question
    )
    try:
        text.encode("utf-8")  # bytes that were not UTF-8 survive only as lone surrogates
    except UnicodeEncodeError:
        raise UsageError(
            "问题不是有效的 UTF-8 文本（可能来自其他编码的文件或终端）：请转成 UTF-8 后重试。"
        ) from None
    return text


def _cancel_on_interrupt(agent: Agent) -> None:
    """First Ctrl+C cancels the turn cleanly; a second one leaves at once."""

    def handler(signum: int, frame: object) -> None:
        if agent.cancel_requested:
            os._exit(130)
        sys.stderr.write("\n正在取消…（再按一次 Ctrl+C 立即退出）\n")
        agent.cancel()

    signal.signal(signal.SIGINT, handler)


DEMO_ANSWER_NOTE = (
    "⚠ 以上回答用到了演示数据：这是本地合成的行情，不是真实市场数据，结论仅供体验功能。"
)


def used_demo_data(event: RuntimeEvent) -> bool:
    """Whether a tool result came from the synthetic demo market (every market result names its
    source first, so this holds even for a result cut to its head)."""
    return event["type"] == "tool_result" and '"source": "demo"' in str(event["result"])


ActionSentence = Callable[[str, dict[str, Any]], str | None]


def risky_action(agent: Agent) -> ActionSentence:
    """The sentence an approval would show for a call of a tool that needs one (else None):
    what a headless run prints for it instead of the raw arguments."""
    registry, context = agent.runtime.registry, agent.runtime.context

    def sentence(name: str, args: dict[str, Any]) -> str | None:
        spec = registry.get(name)
        needs_approval = spec is not None and spec.requires_approval
        return registry.describe(name, args, context) if needs_approval else None

    return sentence


class TextRenderer:
    def __init__(self, risky_action: ActionSentence | None = None) -> None:
        self.risky_action = risky_action
        self.wrote_text = False
        self.call_text = False  # text written during the current model call
        self.demo = False

    def event(self, event: RuntimeEvent) -> None:
        self.demo = self.demo or used_demo_data(event)
        agent = sub_agent_of(event)
        if agent is not None:
            self._delegate_progress(event, agent)
        elif event["type"] == "text_delta":
            sys.stdout.write(event["text"])
            sys.stdout.flush()
            self.wrote_text = self.call_text = True
        elif event["type"] == "model_start":
            self.call_text = False
        elif event["type"] == "approved":
            self._note(approval_line(event))
        elif event["type"] == "tool_start":
            action = self.risky_action and self.risky_action(event["name"], event["args"])
            self._note(
                f"→ {action}" if action else f"→ {event['title']} {_short_args(event['args'])}"
            )
        elif event["type"] == "tool_result":
            summary = f"：{event['summary']}" if event.get("summary") else ""
            self._note(f"  ✓ {event['name']} {event['elapsed_s']:.2f}s{summary}")
        elif event["type"] == "tool_error":
            self._note(f"  ✗ {event['name']}：{event['error']}")
        elif event["type"] == "provider_switch":
            self._abandon_partial_answer(event)
            self._note(f"⚠ 模型 {event['from']} 不可用，已切换到备用模型 {event['to']}。")
        elif event["type"] == "retry":
            self._note(f"… {event['reason']}，要求模型补充调用工具（第 {event['attempt']} 次）")
        elif event["type"] == "background_wait":
            self._note(f"⏳ 等待后台任务完成：{', '.join(event['task_ids'])}（--no-wait 可不等待）")

    def _delegate_progress(self, event: RuntimeEvent, agent: str) -> None:
        """A sub-agent's tools and end as indented stderr lines (its text is not the answer)."""
        tag = f"  [{agent}]"
        if event["type"] == "tool_start":
            self._note(f"{tag} → {event['title']} {_short_args(event['args'])}")
        elif event["type"] == "tool_result":
            self._note(f"{tag}   ✓ {event['name']} {event['elapsed_s']:.2f}s")
        elif event["type"] == "tool_error":
            self._note(f"{tag}   ✗ {event['name']}：{event['error']}")
        elif event["type"] == "approved":
            self._note(f"{tag} {approval_line(event)}")
        elif event["type"] == "done":
            from wyckoff.cli.sub_agents import STATUS_LABELS

            self._note(f"{tag} {STATUS_LABELS[event['status']]}，{event['elapsed_s']:.1f}s")

    def _abandon_partial_answer(self, event: ProviderSwitch) -> None:
        """Text already printed cannot be taken back: say on stdout that it is void."""
        if self.call_text:
            sys.stdout.write(
                f"\n[以上是模型 {event['from']} 中断前的部分回答，已作废；下面是备用模型 {event['to']} 的回答]\n"
            )
            sys.stdout.flush()
            self.wrote_text = self.call_text = False

    def _note(self, line: str) -> None:
        if self.wrote_text:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.wrote_text = False
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def finish(self, done: Done | None) -> None:
        if self.wrote_text:
            sys.stdout.write("\n")
        if self.demo:  # on stdout: an answer saved to a file keeps its demo label
            sys.stdout.write(DEMO_ANSWER_NOTE + "\n")
        if done is not None and done["status"] == "error":
            sys.stderr.write(f"错误：{done['error']}\n")
        elif done is not None and done["status"] == "cancelled":
            say_cancelled()


class JsonRenderer:
    def __init__(self) -> None:
        self.tool_calls: list[dict[str, Any]] = []
        self.demo = False

    def event(self, event: RuntimeEvent) -> None:
        announce_approval(event)
        self.demo = self.demo or used_demo_data(event)
        if sub_agent_of(event) is not None:
            return
        if event["type"] == "tool_result":
            self.tool_calls.append(_call_entry(event, "ok"))
        elif event["type"] == "tool_error":
            self.tool_calls.append({**_call_entry(event, "error"), "error": event["error"]})

    def finish(self, done: Done | None) -> None:
        ended: Mapping[str, object] = done or {}
        payload = {
            key: ended.get(key)
            for key in ("text", "status", "error", "session_id", "usage", "elapsed_s")
        }
        payload["tool_calls"] = self.tool_calls
        if self.demo:
            payload["data_note"] = DEMO_ANSWER_NOTE.removeprefix("⚠ ")
        sys.stdout.write(json_text(payload) + "\n")


def _call_entry(event: ToolResult | ToolError, status: str) -> dict[str, Any]:
    return {
        "id": event["id"],
        "name": event["name"],
        "status": status,
        "elapsed_s": event["elapsed_s"],
    }


class StreamJsonRenderer:
    def event(self, event: RuntimeEvent) -> None:
        announce_approval(event)
        sys.stdout.write(json_text(event) + "\n")
        sys.stdout.flush()

    def finish(self, done: Done | None) -> None:
        pass


def approval_line(event: Approved) -> str:
    """A risky call about to run, as the user reads it on stderr."""
    return f"✓ 已批准（{APPROVED_BY[event['by']]}）：{event['description']}"


def announce_approval(event: RuntimeEvent) -> None:
    if event["type"] == "approved":
        sys.stderr.write(approval_line(event) + "\n")
        sys.stderr.flush()


def _short_args(args: dict[str, Any]) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= ARGS_PREVIEW_CHARS else text[: ARGS_PREVIEW_CHARS - 1] + "…"
