"""Extraction: what a finished conversation leaves in long-term memory.

At a session's end (`/new`, `/resume`, `/fork`, exit, the end of `wyckoff ask`) a background
thread asks the model for at most 3 tagged lines (`[偏好]`, `[决策]`, and the staged
`[个股观点]`, `[市场观点]`, `[事实]`), gated first: >= 4 messages,
a tool call happened, a model is configured, and this exact batch of messages (its summary
hash) was not processed before. Each line goes through the two-stage dedup; a marker with
the hash is written last, so a crash before it means the batch is simply tried again (the
dedup keeps that from doubling anything). Compaction flushes stable preferences of the head
it is about to cut the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wyckoff.errors import UsageError
from wyckoff.memory.dedup import AddOutcome, AskModel, add_memory
from wyckoff.memory.layers import refresh_memory_layers
from wyckoff.memory.store import MAX_CONTENT_CHARS, MemoryStore, check_type
from wyckoff.memory.tagged import parse_tagged

MIN_MESSAGES = 4
SUMMARY_LINES = 40
TOOL_RESULT_CHARS = 200
MAX_EXTRACTED = 3
L1_TAGS = {
    "偏好": "preference",
    "决策": "decision",
    "个股观点": "stock_opinion",
    "市场观点": "market_view",
    "事实": "fact",
}
REMEMBER_REQUEST = re.compile(r"^\s*(?:请)?记住[：:]\s*(.+)$", re.S)

SESSION_SUMMARY_PROMPT = """你在为一位 A 股投资者整理长期记忆。从下面的对话里只提取以后能稳定改善交易决策的信息：
- 用户稳定的交易偏好、风控习惯、仓位和止损边界（写成 [偏好] 行）；
- 用户确认过的决策规则或阶段性判断逻辑（写成 [决策] 行）；
- 用户对某只股票的阶段性看法和理由（写成 [个股观点] 行，必须写出股票名或 6 位代码）；
- 用户对大盘或板块的阶段性看法和切换条件（写成 [市场观点] 行）；
- 用户自身以后仍然成立的客观情况，如资金规模、能否盘中看盘（写成 [事实] 行）。
不要提取：具体买卖事实、临时操作、当天行情数字、当前持仓、工具调用细节、工具给出的结论。
只输出最多 3 行，每行一种格式：
[偏好] 用户偏好尾盘二次确认，不想开盘买入影响情绪
[决策] 当天跌破确认支撑不买
[个股观点] 用户认为贵州茅台仍在派发阶段，站回 MA200 之前不加仓
[市场观点] 用户认为白酒长期下跌后有修复机会，等放量企稳再看
[事实] 用户上班时间不能看盘，只在收盘后下单
提到具体股票时写出股票名或 6 位代码。没有值得记住的内容就只输出：无"""

FLUSH_PROMPT = """下面这段对话即将被压缩出上下文。只提取用户稳定的投资偏好、仓位/止损风险偏好、对重点标的的长期结论，
每条一行，格式：[偏好] ...，最多 3 行。没有就只输出：无"""


@dataclass
class ExtractionResult:
    status: str  # "skipped" (a gate said no), "done"
    reason: str = ""
    outcomes: list[AddOutcome] = field(default_factory=list)
    layers_written: int = 0

    @property
    def written(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "written")


def summary_input(messages: Sequence[Mapping[str, Any]]) -> str:
    """`[role] content` lines of every message with text (tool results cut to 200
    characters), the last 40 of them."""
    lines = []
    for message in messages:
        content = str(message.get("content") or "").strip()
        if not content:
            continue
        if message.get("role") == "tool":
            content = content[:TOOL_RESULT_CHARS]
        lines.append(f"[{message.get('role')}] {' '.join(content.split())}")
    return "\n".join(lines[-SUMMARY_LINES:])


def provenance_of(messages: Sequence[Mapping[str, Any]]) -> str:
    """'tool_output' when tool results are among the messages (the model may be repeating
    them), else 'model'."""
    return "tool_output" if any(m.get("role") == "tool" for m in messages) else "model"


def summary_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def gate(
    memories: MemoryStore, messages: Sequence[Mapping[str, Any]], has_model: bool
) -> tuple[str | None, str]:
    """(summary hash, "") when the conversation should be extracted, else (None, why not)."""
    if len(messages) < MIN_MESSAGES:
        return None, "消息少于 4 条"
    if not any(m.get("tool_calls") for m in messages):
        return None, "本次对话没有工具调用"
    if not has_model:
        return None, "没有配置模型"
    digest = summary_hash(summary_input(messages))
    if memories.has_marker(digest):
        return None, "这批消息已经提取过"
    return digest, ""


def extract_session_memories(
    memories: MemoryStore,
    messages: Sequence[Mapping[str, Any]],
    ask: AskModel | None,
    *,
    session_id: str | None,
    skip_layers: bool = False,
    layers_ask: AskModel | None = None,
) -> ExtractionResult:
    """Extract, dedup and write; then the layer refresh unless `skip_layers` (exit), asking
    `layers_ask` (default `ask`: a caller may count those calls apart)."""
    digest, why_not = gate(memories, messages, ask is not None)
    if digest is None:
        return ExtractionResult("skipped", why_not)
    reply = ask(SESSION_SUMMARY_PROMPT, summary_input(messages))
    result = ExtractionResult("done")
    for memory_type, content in parse_tagged(reply, L1_TAGS, MAX_EXTRACTED):
        result.outcomes.append(
            add_memory(
                memories,
                memory_type,
                content,
                provenance=provenance_of(messages),
                ask=ask,
                source_ref=f"chat_log:{session_id}",
                metadata={
                    "extractor": "session_summary",
                    "summary_hash": digest,
                    "messages": len(messages),
                },
            )
        )
    memories.add_marker(digest, session_id, result.written)
    if result.written and not skip_layers:
        result.layers_written = refresh_memory_layers(memories, layers_ask or ask)
    return result


def flush_memory_before_compaction(
    memories: MemoryStore,
    head: Sequence[Mapping[str, Any]],
    ask: AskModel,
    *,
    session_id: str | None,
) -> int:
    """Stable preferences in the head compaction is about to cut, written as preference.
    Never stops the compaction: any failure writes nothing. Returns how many were written."""
    dialogue = [m for m in head if m.get("role") in ("user", "assistant")]
    text = summary_input(dialogue)
    if not text:
        return 0
    try:
        reply = ask(FLUSH_PROMPT, text)
        outcomes = [
            add_memory(
                memories,
                memory_type,
                content,
                provenance=provenance_of(head),
                ask=ask,
                source_ref=f"compaction:{session_id}",
                metadata={"extractor": "compaction_flush"},
            )
            for memory_type, content in parse_tagged(reply, {"偏好": "preference"}, MAX_EXTRACTED)
        ]
    except Exception:  # a failed flush must not block compaction
        return 0
    return sum(1 for o in outcomes if o.status == "written")


def remember(
    memories: MemoryStore, content: str, memory_type: str = "preference", *, source_ref: str
) -> AddOutcome:
    """An explicit add by the user (`memory add`, "记住：..."): deterministic dedup only, since
    the user asked for exactly this text to be kept."""
    check_type(memory_type)
    content = " ".join(content.split())
    if not content:
        raise UsageError("记忆内容是空的：请写出要记住的内容。")
    if len(content) > MAX_CONTENT_CHARS:
        raise UsageError(f"记忆太长（{len(content)} 字）：请精简到 {MAX_CONTENT_CHARS} 字以内。")
    return add_memory(
        memories,
        memory_type,
        content,
        provenance="user",
        source_ref=source_ref,
        metadata={"extractor": "user"},
    )


def remember_request(text: str) -> str | None:
    """The text after "记住：" when the user asks for something to be remembered."""
    match = REMEMBER_REQUEST.match(text)
    return match.group(1).strip() if match else None


def extract_in_background(
    memories: MemoryStore,
    messages: Sequence[Mapping[str, Any]],
    ask: AskModel | None,
    *,
    session_id: str | None,
    skip_layers: bool = False,
    layers_ask: AskModel | None = None,
) -> threading.Thread:
    """Run the extraction on a copy of the messages in a thread the process waits for at exit
    (so an exit does not cut a write short); failures are dropped, nothing is half-written."""
    snapshot = [dict(m) for m in messages]

    def run() -> None:
        # on failure no marker is written: the same batch is tried at the next trigger
        with contextlib.suppress(Exception):
            extract_session_memories(
                memories,
                snapshot,
                ask,
                session_id=session_id,
                skip_layers=skip_layers,
                layers_ask=layers_ask,
            )

    thread = threading.Thread(target=run, name="memory-extraction", daemon=False)
    thread.start()
    return thread
