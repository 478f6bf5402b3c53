"""ToolSpec and ToolRegistry: one definition per tool, from which every provider's schema,
argument validation, timeouts, approval rules and result formatting follow.

Every failure of a call — unknown tool, malformed or invalid arguments, an exception, a
timeout — becomes a `ToolOutcome` with an error the model can read and react to.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, InvalidStateError, wait
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from wyckoff.cli.egress import EgressGuard
from wyckoff.cli.events import ToolError, ToolResult
from wyckoff.cli.providers.base import MAX_ARGS_DEPTH
from wyckoff.cli.visible_text import visible
from wyckoff.config import describe_pydantic_error, redact_text
from wyckoff.errors import WyckoffError
from wyckoff.untrusted import mark_untrusted

MAX_RESULT_CHARS = 8_000
RESULT_HEAD_CHARS = 3_000
RESULTS_DIR = "tool-results"


MAX_ERROR_DATA_CHARS = 1_000


class ToolFailure(WyckoffError):
    """Raised by a tool for an expected failure; its message goes to the model as is.
    `untrusted`: text from outside (a server's reason phrase or error message, a redirect's
    address) that explains the failure; it reaches the model inside the marker."""

    def __init__(self, message: str, *, untrusted: str | None = None) -> None:
        super().__init__(message)
        self.untrusted = untrusted


class CancelEvent(threading.Event):
    """A call's cancel flag; `future` completes when it is set, so whoever waits for the
    tool's answer can wait for the cancel too, without polling."""

    def __init__(self) -> None:
        super().__init__()
        self.future: Future[None] = Future()

    def set(self) -> None:
        super().set()
        with contextlib.suppress(InvalidStateError):  # set twice, or from two threads
            self.future.set_result(None)


class DaemonThreads(Executor):
    """Each call on its own daemon thread. Not a ThreadPoolExecutor: its workers are joined
    at exit, so a hung tool would hold the process open after the turn gave up on it."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to whoever reads the future
                future.set_exception(exc)

        threading.Thread(
            target=run, name=f"tool-{getattr(fn, '__name__', 'call')}", daemon=True
        ).start()
        return future


TOOL_THREADS = DaemonThreads()


# What the session lends its tools, by what the tools use of it: the contract names no
# implementation (cli/skills.py, cli/background.py, agents/market_data.py supply them).


class SkillText(Protocol):
    @property
    def name(self) -> str: ...

    def expand(self, user_input: str) -> str: ...


class Skills(Protocol):
    def get(self, name: str) -> SkillText: ...


class TaskView(Protocol):
    @property
    def id(self) -> str: ...

    def snapshot(self) -> dict[str, Any]: ...


class BackgroundTasks(Protocol):
    def tasks(self, session_id: str | None) -> Sequence[TaskView]: ...

    def stored(
        self, session_id: str | None, task_id: str | None = None
    ) -> list[dict[str, Any]]: ...


class OpenMarket(Protocol):
    @property
    def source(self) -> str: ...


@dataclass
class ToolContext:
    """What a tool may use: the provider, the registry, progress and cancel, and what every
    call of the session shares (copies made by `for_call` share the same objects)."""

    home: Path
    registry: ToolRegistry
    session_id: str | None = None
    provider: Any = None
    store: Any = None
    skills: Skills | None = None
    config: Any = None  # read once per turn by the runtime; None outside a turn
    background: BackgroundTasks | None = None
    # (tool, canonical args) the user agreed to through ask_user: each allows one call
    consents: set[tuple[str, str]] = field(default_factory=set)
    markets: dict[str, OpenMarket] = field(default_factory=dict)  # the open one, by source
    egress: EgressGuard = field(default_factory=EgressGuard)
    cancel_event: CancelEvent = field(default_factory=CancelEvent)
    on_progress: Callable[[dict[str, Any]], None] | None = None
    ask_user: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    on_event: Callable[[dict[str, Any]], None] | None = None  # tagged sub-agent RuntimeEvents

    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def read_config(self) -> Any:
        """The turn's config (read from disk when there is none, e.g. a broken file, so
        the tool reports it)."""
        from wyckoff.config import load_config

        return self.config if self.config is not None else load_config(self.home)

    def progress(self, stage: str, detail: str = "", fraction: float | None = None) -> None:
        if self.on_progress is not None:
            self.on_progress({"stage": stage, "detail": detail, "fraction": fraction})

    def for_call(self, **changes: Any) -> ToolContext:
        """A copy for one call (its own progress sink or cancel flag), sharing the rest."""
        return replace(self, **changes)


ResultSummary = Callable[[Any], str]  # the tool's return value -> one Chinese line for people
ToolFunction = Callable[[Any, ToolContext], Any]
# The action a call would take as one Chinese sentence, from its validated arguments and
# the current state (e.g. "删除持仓 600519 贵州茅台（1000 股）"): what consent dialogs show.
ActionDescriber = Callable[[Any, ToolContext], str]
# Why a call cannot run as it stands, from its validated arguments (None: it can).
CallRefusal = Callable[[Any, ToolContext], str | None]
# The host a call sends its arguments to (a network tool), from its validated arguments.
Destination = Callable[[Any], str | None]


@dataclass(frozen=True, kw_only=True)  # by keyword: many fields, several of one type
class ToolSpec:
    name: str
    description: str
    params: type[BaseModel]
    func: ToolFunction
    title: str
    concurrency_safe: bool = False
    requires_approval: bool = False
    background: bool = False
    summarize: ResultSummary | None = None
    timeout_s: float = 60.0
    describe: ActionDescriber | None = None  # every risky tool has one (else: title + JSON)
    refusal: CallRefusal | None = None  # checked before any approval is asked
    output_is_data: bool = True  # False only when the result is the user's own words
    output: type[BaseModel] | None = None  # the result's shape, when it is stable
    mcp_tier: int | None = (
        None  # 1 local history, 2 market/engine, 3 user data/LLM; None: not served
    )
    cancel_grace_s: float = 0.0  # after a cancel, wait this long for the tool's own answer
    reports_events: bool = False  # sends RuntimeEvents while it runs (a delegate): relayed live
    reads_private: bool = False  # returns the user's local data (files, command output)
    destination: Destination | None = None  # after a private read, a new host needs approval

    def schema(self) -> dict[str, Any]:
        """The provider-neutral schema: {name, description, parameters (JSON Schema)}."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": json_schema(self.params),
        }


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


@dataclass
class ToolOutcome:
    """The end of one call: what the model sees (`result` or `error`) and how it went."""

    call_id: str
    name: str
    result: str | None = None
    error: str | None = None
    elapsed_s: float = 0.0
    ref: str | None = None
    task_id: str | None = None
    summary: str | None = None
    raw: Any = None
    marked: bool = False  # the result reaches the model inside the untrusted-data marker
    error_data: str | None = None  # outside text explaining the error, marked like a result

    @classmethod
    def failed(
        cls, call_id: str, name: str, error: BaseException, elapsed_s: float = 0.0
    ) -> ToolOutcome:
        """The outcome of a call that raised `error`."""
        data = getattr(error, "untrusted", None)
        return cls(
            call_id,
            name,
            error=failure_text(error),
            elapsed_s=elapsed_s,
            error_data=data[:MAX_ERROR_DATA_CHARS] if data else None,
        )

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def shown_error(self) -> str:
        """The error as people read it: the sentence, then the outside text made visible."""
        data = f"\n{visible(self.error_data)}" if self.error_data else ""
        return f"{self.error}{data}"

    def observation(self) -> str:
        """What the model reads: a data result inside the marker, or the error (with its
        outside text inside the marker)."""
        if not self.ok:
            data = f"\n{mark_untrusted(self.error_data, self.name)}" if self.error_data else ""
            return f"工具错误：{self.error}{data}"
        return mark_untrusted(self.result or "", self.name) if self.marked else self.result or ""

    def event(self) -> ToolResult | ToolError:
        if self.ok:
            return {
                "type": "tool_result",
                "id": self.call_id,
                "name": self.name,
                "result": self.result or "",
                "elapsed_s": round(self.elapsed_s, 3),
                "ref": self.ref,
                "task_id": self.task_id,
                "summary": self.summary,
            }
        return {
            "type": "tool_error",
            "id": self.call_id,
            "name": self.name,
            "error": self.shown_error,
            "elapsed_s": round(self.elapsed_s, 3),
        }


class ToolRegistry:
    def __init__(self, specs: list[ToolSpec] | None = None) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._schemas: list[dict[str, Any]] | None = (
            None  # built once: pydantic schema generation is slow
        )
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        self._specs[spec.name] = spec
        self._schemas = None

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        if self._schemas is None:
            self._schemas = [s.schema() for s in self._specs.values()]
        return [s for s in self._schemas if names is None or s["name"] in names]

    def summarize(self, name: str, value: Any) -> str | None:
        """The tool's one-line summary of a result (marked when it is demo data); None when
        the tool has none or the value is not what it expects."""
        spec = self._specs.get(name)
        if spec is None or spec.summarize is None:
            return None
        try:
            line = spec.summarize(value)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return None
        demo = isinstance(value, dict) and value.get("source") == "demo"
        return f"{line}（演示数据）" if demo else line

    def title(self, name: str) -> str:
        spec = self._specs.get(name)
        return spec.title if spec else name

    def describe(self, name: str, args: dict[str, Any], context: ToolContext) -> str:
        """What a call would do, as one Chinese sentence for a consent dialog (detail lines
        may follow), every hidden character in it made visible."""
        return visible(self._describe(name, args, context), keep_newlines=True)

    def _describe(self, name: str, args: dict[str, Any], context: ToolContext) -> str:
        checked = self.validate({"name": name, "args": args})
        if isinstance(checked, str):
            return f"无法执行的操作：{checked}"
        spec, params = checked
        if spec.describe is None:
            return f"{spec.title}（{name}）：{canonical_args(args)}"
        return spec.describe(params, context)

    def validate(self, call: Mapping[str, Any]) -> tuple[ToolSpec, BaseModel] | str:
        """The spec and parsed arguments of a call, or the error to send back to the model."""
        spec = self._specs.get(call["name"])
        if spec is None:
            return f"没有名为 {call['name']} 的工具。可用工具：{', '.join(self._specs)}。"
        args = call.get("args") or {}
        if "__malformed_arguments__" in args:
            raw = str(args["__malformed_arguments__"])[:200]
            return (
                f"{spec.name} 的参数不是合法的 JSON（或嵌套超过 {MAX_ARGS_DEPTH} 层）：{raw}。"
                "请按工具的参数定义重新调用。"
            )
        try:
            return spec, spec.params.model_validate(args)
        except ValidationError as exc:
            problems = "；".join(
                f"{'.'.join(str(p) for p in e['loc']) or '参数'}：{describe_pydantic_error(e)}"
                for e in exc.errors()[:3]
            )
            return f"{spec.name} 的参数无效：{problems}。请按工具的参数定义重新调用。"

    def run(
        self, spec: ToolSpec, params: BaseModel, context: ToolContext, call_id: str
    ) -> ToolOutcome:
        """Run a validated call on its own thread; wait for its answer, the user's cancel
        or the tool's timeout, whichever comes first (a hung tool is left behind)."""
        started = time.monotonic()
        answer = TOOL_THREADS.submit(spec.func, params, context)
        wait([answer, context.cancel_event.future], spec.timeout_s, FIRST_COMPLETED)
        if not answer.done() and context.cancelled() and spec.cancel_grace_s > 0:
            wait([answer], spec.cancel_grace_s)  # its own answer to the cancel is worth having
        elapsed = time.monotonic() - started
        # A cancelled call reports the cancel even when the tool, seeing it, answered at once;
        # only a tool with a grace period has an answer to the cancel worth passing on.
        if context.cancelled() and not (answer.done() and spec.cancel_grace_s > 0):
            return ToolOutcome(call_id, spec.name, error="已被用户取消。", elapsed_s=elapsed)
        if not answer.done():
            context.cancel_event.set()  # the tool may still see it and stop
            return ToolOutcome(
                call_id,
                spec.name,
                error=f"{spec.name} 超过 {spec.timeout_s:g} 秒未完成，已停止等待。可缩小范围后重试。",
                elapsed_s=elapsed,
            )
        error = answer.exception()
        if error is not None:
            return ToolOutcome.failed(call_id, spec.name, error, elapsed)
        outcome = self.finish(call_id, spec.name, answer.result(), elapsed, context)
        outcome.summary = self.summarize(spec.name, outcome.raw)
        return outcome

    def finish(
        self,
        call_id: str,
        name: str,
        value: Any,
        elapsed_s: float,
        context: ToolContext,
        task_id: str | None = None,
    ) -> ToolOutcome:
        """Serialise a result; one over MAX_RESULT_CHARS is written whole to disk."""
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        )
        spec = self._specs.get(name)
        ref = None
        if len(text) > MAX_RESULT_CHARS:
            ref = spill_result(context.home, context.session_id, call_id, name, text)
            text = (
                f"{text[:RESULT_HEAD_CHARS]}\n……\n[结果共 {len(text):,} 字符，以上为开头。完整结果已保存：{ref}。"
                f'需要更多时调用 read_tool_result(ref="{ref}", offset={RESULT_HEAD_CHARS})。]'
            )
        return ToolOutcome(
            call_id,
            name,
            result=text,
            elapsed_s=elapsed_s,
            ref=ref,
            task_id=task_id,
            raw=value,
            marked=spec is None or spec.output_is_data,
        )


def failure_text(error: BaseException) -> str:
    """A tool's exception as the model reads it: an expected failure's own message, or the
    bug's type and message (a tool bug must not end the turn)."""
    if isinstance(error, WyckoffError):
        return error.message
    return f"{type(error).__name__}: {error}"


def spill_result(home: Path, session_id: str | None, call_id: str, name: str, text: str) -> str:
    """Write a large result under tool-results/ and index it; returns the file path."""
    folder = home / RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe_id = (
        "".join(ch for ch in call_id if ch.isalnum() or ch in "-_")[:40] or uuid.uuid4().hex[:8]
    )
    path = folder / f"{stamp}_{name}_{safe_id}.txt"
    path.write_text(redact_text(text), encoding="utf-8")
    entry = {
        "ref": str(path),
        "tool": name,
        "call_id": call_id,
        "session_id": session_id,
        "chars": len(text),
        "ts": stamp,
    }
    with (folder / "index.jsonl").open("a", encoding="utf-8") as index:
        index.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return str(path)


def saved_result(home: Path, observation: str) -> str | None:
    """The whole text of a result that was cut for the model (the note `finish` appends names
    its file under tool-results/); None when the observation is whole or names no file of ours."""
    found = re.findall(r'read_tool_result\(ref="([^"]+)"', observation)
    if not found:
        return None
    path, folder = Path(found[-1]).resolve(), (home / RESULTS_DIR).resolve()
    if path.parent != folder or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def canonical_args(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
