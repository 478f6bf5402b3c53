"""Context compaction: when a conversation nears the model's window, the old head becomes a
short summary plus verbatim anchors and a restorable archive; the recent tail stays as is.

Reserve = min(max(16384, min(window x 0.25, 32768)), window / 2); compaction triggers when
the estimate exceeds window - reserve. Only a copy of the head is shrunk for the summary;
live tool observations are never rewritten. If the summary fails, nothing changes.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.archive_store import ARCHIVE_DIR
from wyckoff.cli.chat_log import without_secrets
from wyckoff.cli.messages import (
    AssistantMessage,
    History,
    Message,
    ToolCall,
    is_user_words,
    kind_of,
    synthetic,
    tool_calls_of,
)
from wyckoff.cli.tokens import byte_bound, count_message, count_messages
from wyckoff.config import redact_value
from wyckoff.untrusted import mark_untrusted

if TYPE_CHECKING:
    from wyckoff.cli.tokens import MessageTokenCache

TAIL_TOKENS = 20_000
TAIL_SHARE_OF_THRESHOLD = 0.4
TAIL_MIN_MESSAGES = 4
SHRINK_THRESHOLD = 800
SHRUNK_MIN, SHRUNK_MAX = 400, 600
SUMMARY_MAX_CHARS = 500
SUMMARY_MIN_CHARS = 20
MAX_ANCHORS = 6
ANCHOR_CHARS = 240
ANCHOR_OPENING_CHARS = 60  # an excerpt starts with the message's opening...
ANCHOR_WINDOW_CHARS = 30  # ...then this much either side of each important match
MAX_CARRIED_ANCHORS = 6  # anchors of earlier compactions kept (the oldest: the session's goals)
MAX_CARRIED_REFS = 8  # archive refs kept in context; each archive's metadata has the rest
SUMMARY_HEADING, ANCHORS_HEADING, ARCHIVE_HEADING = "[对话摘要]", "[动态保留片段]", "[可恢复归档]"
ARCHIVE_REF = re.compile(r"archive://[\w-]+/ctx_\w+")
CODE = re.compile(r"(?<!\d)(\d{6})(?!\d)")
PATH = re.compile(
    r"(?:~|\.{1,2})?/[\w.\-/]+\.\w+|[\w\-]+/[\w.\-/]+\.(?:py|md|json|csv|txt|jsonl|toml|yaml|yml)"
)
KEYWORDS = (
    "报错",
    "错误",
    "失败",
    "异常",
    "提交",
    "回测",
    "持仓",
    "建仓",
    "加仓",
    "减仓",
    "止损",
    "止盈",
    "买入",
    "卖出",
    "成本",
)
ACK = "好的，我已了解之前的对话上下文，请继续。"
COMPACTION_PROMPT = """你在为一段 A 股投研对话写压缩摘要，供后续对话继续使用。用不超过 500 个汉字写清：
1. 用户的意图和约束（风险偏好、关注的股票、要求）；
2. 已完成的动作（调用过哪些工具、得到了什么结论）；
3. 每只涉及股票的关键结论（代码、价格、健康度、信号），保留数字。
只输出摘要正文。"""


def reserve_tokens(window: int) -> int:
    return int(min(max(16384, min(window * 0.25, 32768)), window / 2))


def threshold(window: int) -> int:
    return window - reserve_tokens(window)


def tail_budget(window: int) -> int:
    return int(min(TAIL_TOKENS, threshold(window) * TAIL_SHARE_OF_THRESHOLD))


def find_tail_start(messages: History, budget: int) -> int:
    """Index where the kept tail starts: the newest `budget` tokens, at least 4 messages, never
    on a tool result, widened so every tool result keeps its assistant call. A cut inside the
    first turn's tool results moves past them instead (back to the call would leave nothing
    to compact, every turn, while those results fill a small window)."""
    start, used = len(messages), 0
    while start > 0:
        cost = count_message(messages[start - 1])
        if used + cost > budget and len(messages) - start >= TAIL_MIN_MESSAGES:
            break
        used += cost
        start -= 1
    cut = start
    while 0 < start < len(messages) and messages[start]["role"] == "tool":
        start -= 1
    start = expand_for_tool_refs(messages, start)
    if start <= 1:
        return past_tool_results(messages, cut) or start
    return start


def past_tool_results(messages: History, cut: int) -> int | None:
    """The first message after the tool results at `cut` (a safe place to start the tail:
    they are answered whole in the head), or None when they run to the end."""
    while cut < len(messages) and messages[cut]["role"] == "tool":
        cut += 1
    if cut >= len(messages) or cut == 0 or messages[cut - 1]["role"] != "tool":
        return None
    return cut


def expand_for_tool_refs(messages: History, start: int) -> int:
    needed = {m["tool_call_id"] for m in messages[start:] if m["role"] == "tool"}
    for index in range(start - 1, -1, -1):
        if not needed:
            break
        calls = {c["id"] for c in tool_calls_of(messages[index])}
        if calls & needed:
            start = index
            needed -= calls
    return start


# --- anchors and shrinking ----------------------------------------------------------------------


def importance(message: Message) -> int:
    """Scored over the whole message: a code at the end of a long one counts too."""
    if kind_of(message) == "compaction_summary":
        return 0  # an earlier compaction: its anchors and refs are carried forward as they are
    text = str(message.get("content") or "")
    score = 3 if is_user_words(message) else 0
    score += min(len(set(CODE.findall(text))), 3) * 2
    if "/" in text:  # the path pattern is the costly one
        score += min(len(PATH.findall(text)), 2) * 2
    score += sum(1 for k in KEYWORDS if k in text)
    score += 1 if tool_calls_of(message) or message["role"] == "tool" else 0
    return score


def important_spans(text: str) -> list[tuple[int, int]]:
    """Where codes and paths (first), then keywords, occur in the text."""
    spans = [m.span() for m in CODE.finditer(text)]
    if "/" in text:
        spans += [m.span() for m in PATH.finditer(text)]
    for keyword in KEYWORDS:
        position = text.find(keyword)
        if position >= 0:
            spans.append((position, position + len(keyword)))
    return spans


def excerpt(text: str, limit: int = ANCHOR_CHARS) -> str:
    """The text if it fits; else its opening plus a window around each important match, in
    order, while they fit."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    windows = [(0, ANCHOR_OPENING_CHARS)]
    used = ANCHOR_OPENING_CHARS
    for start, end in important_spans(text):
        window = (max(start - ANCHOR_WINDOW_CHARS, 0), min(end + ANCHOR_WINDOW_CHARS, len(text)))
        if any(a <= start and end <= b for a, b in windows):
            continue
        if used + window[1] - window[0] + 1 > limit:
            continue
        windows.append(window)
        used += window[1] - window[0] + 1
    merged: list[list[int]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return "…".join(text[a:b] for a, b in merged)


def select_anchors(head: list[Message], limit: int = MAX_ANCHORS) -> list[str]:
    """Short verbatim excerpts of the most important head messages, in their order."""
    scores = [importance(m) for m in head]
    ranked = sorted(range(len(head)), key=lambda i: (-scores[i], -i))[:limit]
    anchors = []
    for index in sorted(i for i in ranked if scores[i] > 0):
        message = head[index]
        text = str(message.get("content") or "")
        calls = tool_calls_of(message)
        if calls:
            text = (text + " " + calls_text(calls)).strip()
        label = {
            "user": "用户",
            "assistant": "助手",
            "tool": f"工具 {message.get('name', '')}",
        }.get(message["role"], message["role"])
        anchors.append(f"- [{label}] {excerpt(text)}")
    return anchors


@lru_cache(maxsize=4096)
def shrink_tool_result(content: str) -> str:
    """A 400-600 character structured summary of a large tool result (codes, prices, health,
    signals, conclusions), padded with its opening text."""
    parts: list[str] = []
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        for key in (
            "source",
            "as_of",
            "code",
            "name",
            "close",
            "health",
            "health_label",
            "phase",
            "regime",
            "summary",
            "triggers",
            "channels",
            "categories",
        ):
            if key in data:
                parts.append(f"{key}={json.dumps(data[key], ensure_ascii=False)[:120]}")
        for key in ("top_candidates", "positions", "orders", "results"):
            if isinstance(data.get(key), list):
                items = [
                    f"{r.get('code')}{r.get('name', '')} {r.get('close', '')} {r.get('health', '') or r.get('action', '')}".strip()
                    for r in data[key][:6]
                    if isinstance(r, dict)
                ]
                parts.append(f"{key}: " + "; ".join(items))
    codes = sorted(set(CODE.findall(content)))[:10]
    if codes and not any(p.startswith("code=") for p in parts):
        parts.append("codes=" + ",".join(codes))
    summary = "[已压缩的工具结果] " + " | ".join(parts)
    if len(summary) < SHRUNK_MIN:
        summary += " | 开头：" + content[: SHRUNK_MIN + 100 - len(summary)]
    return summary[:SHRUNK_MAX]


def shrink_stale_tool_results(head: list[Message]) -> list[Message]:
    """A copy of the head with every tool result over 800 characters shrunk."""
    return [
        {**m, "content": shrink_tool_result(m["content"])}
        if m["role"] == "tool" and len(str(m.get("content") or "")) > SHRINK_THRESHOLD
        else m
        for m in head
    ]


def calls_text(calls: list[ToolCall]) -> str:
    """Tool calls as `name({args})`, separated by semicolons."""
    return "; ".join(
        f"{c['name']}({json.dumps(c.get('args') or {}, ensure_ascii=False)})" for c in calls
    )


def serialize_for_summary(head: list[Message]) -> str:
    lines = []
    for message in head:
        if message["role"] == "tool":
            lines.append(f"[tool:{message.get('name', '')}] {message.get('content', '')}")
        elif tool_calls_of(message):
            calls = calls_text(tool_calls_of(message))
            lines.append(f"[assistant] {message.get('content') or ''} [调用 {calls}]")
        else:
            lines.append(f"[{message['role']}] {message.get('content') or ''}")
    return "\n".join(lines)


# --- archive --------------------------------------------------------------------------------------


def archive_messages(
    home: Path,
    session_id: str,
    removed: list[Message],
    summary: str,
    anchors: list[str],
    earlier_refs: Sequence[str] = (),
) -> str:
    """Write the removed messages and their metadata; returns `archive://session/id`."""
    archive_id = f"ctx_{datetime.now().strftime('%Y%m%d%H%M%S')}_{uuid.uuid4().hex[:6]}"
    folder = home / ARCHIVE_DIR / session_id
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{archive_id}.jsonl").open("w", encoding="utf-8") as handle:
        for message in removed:
            handle.write(json.dumps(without_secrets(message), ensure_ascii=False) + "\n")
    text = "\n".join(str(m.get("content") or "") for m in removed)
    ref = f"archive://{session_id}/{archive_id}"
    metadata = {
        "ref": ref,
        "created_at": datetime.now().isoformat(timespec="seconds"),
        "messages": len(removed),
        "summary": summary,
        "codes": sorted(set(CODE.findall(text))),
        "paths": sorted(set(PATH.findall(text)))[:20],
        "keywords": [k for k in KEYWORDS if k in text],
        "anchors": anchors,
        "earlier_refs": list(earlier_refs),
    }
    (folder / f"{archive_id}.json").write_text(
        json.dumps(redact_value(metadata), ensure_ascii=False, indent=2), encoding="utf-8"
    )
    return ref


# --- the whole step ---------------------------------------------------------------------------------


@dataclass
class CompactionResult:
    messages: list[Message]
    archive_ref: str
    before: int
    after: int
    summary: str


def compact(
    messages: History,
    *,
    window: int,
    summarize: Callable[[str], str],
    home: Path,
    session_id: str,
    flush_memory: Callable[[list[Message]], None] | None = None,
) -> CompactionResult | None:
    """Compact `messages` (not modified); None when there is nothing to gain or the summary fails."""
    start = find_tail_start(messages, tail_budget(window))
    if start <= 1:
        return None
    head, tail = messages[:start], messages[start:]
    earlier_anchors, earlier_refs = carried_from_earlier(head)
    anchors = earlier_anchors[:MAX_CARRIED_ANCHORS] + select_anchors(head)
    if flush_memory is not None:
        flush_memory(head)
    try:
        summary = summarize(serialize_for_summary(shrink_stale_tool_results(head))).strip()
    except Exception:  # a failed summary means no compaction, never a broken history
        return None
    if len(summary) < SUMMARY_MIN_CHARS:
        return None
    summary = summary[:SUMMARY_MAX_CHARS]
    ref = archive_messages(home, session_id, head, summary, anchors, earlier_refs)
    # A model's rewrite of old tool data and anchors quoted from it: data, not the user.
    recap = "\n".join([summary, ANCHORS_HEADING, *(anchors or ["- （无）"])])
    opening = "\n".join(
        [
            SUMMARY_HEADING,
            mark_untrusted(recap, "compaction"),
            ARCHIVE_HEADING,
            *(f"- {r}（更早的归档）" for r in earlier_refs[-(MAX_CARRIED_REFS - 1) :]),
            f"- {ref}（需要原文时调用 restore_context_archive）",
        ]
    )
    # The acknowledgement keeps roles alternating; a tail that opens with the assistant needs none.
    ack: list[AssistantMessage] = (
        [{"role": "assistant", "content": ACK}] if tail[0]["role"] == "user" else []
    )
    compacted: list[Message] = [synthetic("compaction_summary", opening), *ack, *tail]
    return CompactionResult(compacted, ref, len(messages), len(compacted), summary)


def carried_from_earlier(head: list[Message]) -> tuple[list[str], list[str]]:
    """Anchors and archive refs of earlier compactions found in the head, oldest first."""
    anchors: list[str] = []
    refs: list[str] = []
    for message in head:
        if kind_of(message) != "compaction_summary":
            continue
        text = str(message.get("content") or "")
        _, _, rest = text.partition(ANCHORS_HEADING)
        kept, _, archive = rest.partition(ARCHIVE_HEADING)
        anchors += [line for line in kept.splitlines() if line.startswith("- [")]
        refs += [r for r in ARCHIVE_REF.findall(archive) if r not in refs]
    return anchors, refs


def needs_compaction(
    messages: History,
    window: int,
    system_prompt: str = "",
    tools: list[dict[str, Any]] | None = None,
    cache: MessageTokenCache | None = None,
) -> bool:
    """Whether the history plus prompt and tools exceed the threshold (`cache`: a
    MessageTokenCache that makes repeated checks cheap)."""
    if byte_bound(messages, system_prompt, tools) <= threshold(window):
        return False  # far below the limit: no need to load the tokenizer (~0.4 s)
    fixed = count_messages([], system_prompt, tools)
    used = cache.count(messages) if cache is not None else count_messages(messages)
    return fixed + used > threshold(window)
