"""Tools that belong to the runtime itself (not to the market): reading spilled results,
asking the user, background task status; and the default registry every front end uses."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from wyckoff import archive_store
from wyckoff.agents.backtest import BACKTEST_TOOL
from wyckoff.agents.history import QUERY_HISTORY_TOOL
from wyckoff.agents.intraday import INTRADAY_TOOLS, TAIL_TOOLS
from wyckoff.agents.overview import OVERVIEW_TOOLS
from wyckoff.agents.past_market import PAST_MARKET_TOOLS
from wyckoff.agents.portfolio import PORTFOLIO_TOOLS
from wyckoff.agents.reports import REPORT_TOOLS
from wyckoff.agents.scorecard import RECORD_ADVICE_TOOL
from wyckoff.agents.screening import SCREEN_TOOL
from wyckoff.agents.stocks import STOCK_TOOLS
from wyckoff.agents.sweep import SWEEP_TOOL
from wyckoff.cli.background import CHECK_BACKGROUND_TASKS
from wyckoff.cli.local_tools.files import READ_FILE, WRITE_FILE
from wyckoff.cli.local_tools.shell import EXEC_COMMAND
from wyckoff.cli.local_tools.web import WEB_FETCH
from wyckoff.cli.messages import is_consent
from wyckoff.cli.skills import EXECUTE_SKILL
from wyckoff.cli.tools import (
    RESULTS_DIR,
    ToolContext,
    ToolFailure,
    ToolRegistry,
    ToolSpec,
    canonical_args,
)
from wyckoff.errors import UsageError
from wyckoff.routine.watchlist import WATCHLIST_TOOLS

READ_LIMIT = 6_000


class ReadToolResultParams(BaseModel):
    ref: str = Field(description="工具结果中给出的完整结果路径")
    offset: int = Field(default=0, ge=0, description="从第几个字符开始读")
    limit: int = Field(default=READ_LIMIT, ge=100, le=20_000, description="最多读多少字符")


def read_tool_result(params: ReadToolResultParams, context: ToolContext) -> dict[str, Any]:
    folder = (context.home / RESULTS_DIR).resolve()
    path = Path(params.ref).expanduser().resolve()
    if folder not in path.parents or not path.is_file():
        raise ToolFailure(f"{params.ref} 不是已保存的工具结果（只能读取 {folder} 下的文件）。")
    text = path.read_text(encoding="utf-8")
    # another tool's saved output is as private as that tool's (an old session's command output)
    context.egress.note_read(context.registry.get(saved_by(folder, path)))
    piece = text[params.offset : params.offset + params.limit]
    end = params.offset + len(piece)
    return {
        "ref": str(path),
        "offset": params.offset,
        "end": end,
        "total_chars": len(text),
        "more": end < len(text),
        "text": piece,
    }


def saved_by(folder: Path, path: Path) -> str:
    """The tool whose result `path` is, from the folder's index ("" when it is not listed)."""
    index = folder / "index.jsonl"
    if not index.is_file():
        return ""
    for line in index.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            entry = json.loads(line)
            if Path(entry["ref"]).resolve() == path:
                return str(entry["tool"])
    return ""


def summarize_read(result: dict[str, Any]) -> str:
    more = "，还有后续" if result["more"] else ""
    return (
        f"读取第 {result['offset']:,}–{result['end']:,} 字符（共 {result['total_chars']:,}）{more}"
    )


READ_TOOL_RESULT = ToolSpec(
    name="read_tool_result",
    description="分段读取一个被保存到磁盘的完整工具结果（结果过长时工具只返回开头和路径）。",
    params=ReadToolResultParams,
    func=read_tool_result,
    title="读取完整结果",
    concurrency_safe=True,
    summarize=summarize_read,
    timeout_s=10,
)


class ProposedAction(BaseModel):
    tool: str = Field(description="问题所征求同意的工具名，如 update_portfolio")
    args: dict[str, Any] = Field(default_factory=dict, description="将要执行的确切参数")


class AskUserParams(BaseModel):
    question: str = Field(description="要问用户的问题")
    options: list[str] = Field(default_factory=list, description="可选答案")
    allow_free_text: bool = Field(default=True, description="是否允许用户自由输入")
    action: ProposedAction | None = Field(
        default=None,
        description="若是在征求执行某个操作的同意，填写该操作；用户同意只对这一个确切操作有效",
    )


def ask_user(params: AskUserParams, context: ToolContext) -> dict[str, Any]:
    """Ask through the front end; headless there is nobody to ask, so the model goes on."""
    if context.ask_user is None:
        return {
            "status": "unavailable",
            "note": "当前是无界面模式，无法询问用户。请基于已有信息继续，并在回答中说明需要用户确认的事项。",
        }
    question = params.model_dump()
    if params.action is not None:  # consent is only to what the dialog shows
        question["action_description"] = context.registry.describe(
            params.action.tool, params.action.args, context
        )
    answer = context.ask_user(question)
    text = str(answer.get("answer", "")).strip()
    approved = bool(params.action) and is_consent(text)
    if approved and params.action is not None:
        context.consents.add((params.action.tool, canonical_args(params.action.args)))
    result = {"status": answer.get("status", "answered"), "answer": text}
    if params.action is not None:
        result["approved_action"] = params.action.model_dump() if approved else None
    return result


def summarize_answer(result: dict[str, Any]) -> str:
    if result["status"] == "answered":
        return f"用户回答：{result['answer']}"
    return "无界面模式，没有询问用户" if result["status"] == "unavailable" else "用户跳过了问题"


ASK_USER = ToolSpec(
    name="ask_user",
    description="向用户提问并等待回答（可给选项）。需要用户同意某个操作时，在 action 中写明确切的工具和参数。",
    params=AskUserParams,
    func=ask_user,
    title="询问用户",
    summarize=summarize_answer,
    timeout_s=3600,
    output_is_data=False,  # the user's own answer
)


class RestoreArchiveParams(BaseModel):
    ref: str = Field(description="archive://会话/编号，见对话摘要中的 [可恢复归档]")


def restore_context_archive(params: RestoreArchiveParams, context: ToolContext) -> dict[str, Any]:
    try:
        messages = archive_store.restore_context_archive(context.home, params.ref)
    except UsageError as exc:
        raise ToolFailure(exc.message) from None
    context.egress.note_history(  # the restored results count as read in this session
        (m.get("name", "") for m in messages if m.get("role") == "tool"), context.registry.get
    )
    return {"ref": params.ref, "messages": messages}


RESTORE_CONTEXT_ARCHIVE = ToolSpec(
    name="restore_context_archive",
    description="恢复被上下文压缩移走的原始消息（需要之前的原文证据时使用）。",
    params=RestoreArchiveParams,
    func=restore_context_archive,
    title="恢复归档",
    concurrency_safe=True,
    summarize=lambda result: f"恢复了 {len(result['messages'])} 条消息",
    timeout_s=10,
)

RUNTIME_TOOLS = (READ_TOOL_RESULT, CHECK_BACKGROUND_TASKS, ASK_USER, RESTORE_CONTEXT_ARCHIVE)


def default_registry() -> ToolRegistry:
    """Every tool the agent has."""
    local_tools = [READ_FILE, WRITE_FILE, EXEC_COMMAND, WEB_FETCH]
    return ToolRegistry(
        [
            *STOCK_TOOLS,
            *OVERVIEW_TOOLS,
            SCREEN_TOOL,
            BACKTEST_TOOL,
            QUERY_HISTORY_TOOL,
            SWEEP_TOOL,
            *PORTFOLIO_TOOLS,
            *WATCHLIST_TOOLS,
            *REPORT_TOOLS,
            RECORD_ADVICE_TOOL,
            *TAIL_TOOLS,
            *INTRADAY_TOOLS,
            EXECUTE_SKILL,
            *RUNTIME_TOOLS,
            *local_tools,
        ]
    )


def mcp_registry() -> ToolRegistry:
    """What wyckoff-mcp serves from (by tier): every tool the agent has, and the tools only
    MCP clients get (the market on a past date; the agent's own tools cover its questions)."""
    registry = default_registry()
    for spec in PAST_MARKET_TOOLS:
        registry.register(spec)
    return registry
