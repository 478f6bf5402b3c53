"""Runtime guards: tools a turn must call before answering, and doom-loop detection.

Required tools (the spec's Loop Guard): questions about the user's holdings must be answered
from the `portfolio` tool, not from memory. Recalled memories (`<relevant-memories>`) are
stripped before matching so remembered words never trigger a requirement.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from wyckoff.cli.messages import History, Message, ToolCall, UserMessage, is_go_ahead, synthetic
from wyckoff.cli.tools import canonical_args

MAX_INCOMPLETE_TOOL_RETRIES = 2
CONTEXT_WINDOW_MESSAGES = 4
DOOM_LOOP_WINDOW = 6
DOOM_LOOP_THRESHOLD = 3
DOOM_LOOP_EXEMPT = frozenset({"check_background_tasks"})
FUZZY_MIN_CHARS = 50
FUZZY_JACCARD = 0.8

VIEW_PORTFOLIO = (
    "我有什么持仓",
    "我买了啥",
    "我买了什么",
    "持仓情况",
    "我的持仓",
    "查看持仓",
    "看看持仓",
    "持仓列表",
    "我持有什么",
    "我有哪些股票",
)
DIAGNOSE_PORTFOLIO = (
    "我持仓怎么样",
    "持仓怎么样",
    "持仓健康吗",
    "帮我审一下持仓",
    "审一下持仓",
    "持仓诊断",
    "诊断持仓",
    "诊断一下持仓",
    "持仓体检",
    "体检持仓",
    "检查持仓",
    "检查一下持仓",
    "持仓风险",
)
FOLLOW_UP = (
    "体检",
    "健康吗",
    "诊断",
    "分析这些",
    "分析一下这些",
    "这几只",
    "这些股票",
    "它们怎么样",
    "都怎么样",
    "怎么样了",
)
HOLDING_MARKERS = ("持仓", "成本价", "持股", "| 代码 | 名称", "cost_price", "shares")
DIAGNOSIS_HINTS = ("体检", "诊断", "分析", "健康", "检查")
FOLLOW_UP_MAX_CHARS = 12
MEMORY_BLOCK = re.compile(r"<relevant-memories>.*?</relevant-memories>", re.S)
CURRENT_MESSAGE = re.compile(r"<current-user-message>(.*?)</current-user-message>", re.S)


@dataclass(frozen=True)
class Expectation:
    tool: str
    args: dict[str, Any]
    reason: str

    def satisfied_by(self, calls: list[ToolCall]) -> bool:
        wanted_mode = self.args.get("mode")
        for call in calls:
            if call["name"] != self.tool:
                continue
            mode = (call.get("args") or {}).get("mode", "view")
            if wanted_mode != "diagnose" or mode == "diagnose":
                return True
        return False

    def retry_message(self) -> UserMessage:
        """The prompt that sends the model back to call the tool."""
        args = ", ".join(f'{k}="{v}"' for k, v in self.args.items())
        return synthetic(
            "tool_retry",
            f"[系统提醒] {self.reason}。请直接调用 {self.tool}({args}) 获取真实数据后再回答，"
            "不要凭记忆或只描述计划。",
        )

    def warning(self) -> str:
        """Put before the answer: it was written without the required tool."""
        return f"⚠️ 注意：本回答没有调用 {self.tool} 工具核实数据，可能不可靠。\n\n"


def user_text(message: Message) -> str:
    """What the user typed: recalled memories removed, the current message unwrapped."""
    content = str(message.get("content") or "")
    current = CURRENT_MESSAGE.search(content)
    if current:
        content = current.group(1)
    return MEMORY_BLOCK.sub("", content).strip().lower()


def resolve_turn_expectation(messages: History) -> Expectation | None:
    """The tool the current turn must call, judged from the last user message and context."""
    if not messages or messages[-1].get("role") != "user":
        return None
    text = user_text(messages[-1])
    if any(k in text for k in DIAGNOSE_PORTFOLIO):
        return Expectation("portfolio", {"mode": "diagnose"}, "诊断持仓需要真实持仓数据")
    if any(k in text for k in VIEW_PORTFOLIO):
        return Expectation("portfolio", {"mode": "view"}, "回答持仓问题需要真实持仓数据")
    context = " ".join(
        str(m.get("content") or "") for m in messages[:-1][-CONTEXT_WINDOW_MESSAGES:]
    )
    holdings_in_context = any(marker in context for marker in HOLDING_MARKERS)
    if not holdings_in_context:
        return None
    if len(text) <= FOLLOW_UP_MAX_CHARS and any(k in text for k in FOLLOW_UP):
        return Expectation("portfolio", {"mode": "diagnose"}, "这是对持仓的追问，需要真实持仓数据")
    if is_go_ahead(text) and any(h in context for h in DIAGNOSIS_HINTS):
        return Expectation(
            "portfolio", {"mode": "diagnose"}, "用户同意了持仓诊断，需要真实持仓数据"
        )
    return None


class DoomLoopDetector:
    """Flags the third identical (or nearly identical) call among the last six."""

    def __init__(self) -> None:
        self.recent: deque[tuple[str, str, str]] = deque(maxlen=DOOM_LOOP_WINDOW - 1)

    def check(self, name: str, args: dict[str, Any]) -> str | None:
        """Record a call; return an error message if it repeats too often."""
        text = canonical_args(args)
        digest = hashlib.sha256(text.encode()).hexdigest()
        if name in DOOM_LOOP_EXEMPT:
            return None
        same = sum(1 for n, d, _ in self.recent if n == name and d == digest)
        similar = 0
        if len(text) >= FUZZY_MIN_CHARS:
            grams = trigrams(text)
            similar = sum(
                1
                for n, d, t in self.recent
                if n == name
                and d != digest
                and len(t) >= FUZZY_MIN_CHARS
                and jaccard(grams, trigrams(t)) >= FUZZY_JACCARD
            )
        self.recent.append((name, digest, text))
        if same + 1 >= DOOM_LOOP_THRESHOLD:
            return f"检测到重复调用：{name} 以相同参数在最近 {DOOM_LOOP_WINDOW} 次调用中出现了 {same + 1} 次，已中止本批工具调用。请换一种方法，或直接根据已有结果回答。"
        if same + similar + 1 >= DOOM_LOOP_THRESHOLD:
            return f"检测到近似重复调用：{name} 的参数与最近的调用几乎相同（{same + similar + 1} 次），已中止本批工具调用。请换一种方法，或直接根据已有结果回答。"
        return None


def trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(max(len(text) - 2, 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
