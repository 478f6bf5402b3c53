"""Two-stage dedup before any memory is written.

1. Deterministic: normalised text equal, or character-bigram (Dice) similarity >= 0.8 with a
   memory of the same type -> a duplicate, no model call.
2. The model compares the new text with the latest 10 memories of that type and answers NEW,
   DUPLICATE <id> or SUPERSEDES <id>. A failed call, an unreadable answer or an id that is
   not among the ten skips the write: an unconfirmed memory never enters long-term memory.
   SUPERSEDES is accepted only for a memory about the same stocks (same codes).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from wyckoff.memory.codes import resolve_codes
from wyckoff.memory.policy import policy_phrase, refusal
from wyckoff.memory.store import Memory, MemoryStore, clean_content

SIMILARITY_DUPLICATE = 0.8
MODEL_CANDIDATES = 10
PUNCTUATION = re.compile(r"[\s\W_]+", re.UNICODE)
VERDICT = re.compile(r"^\s*(NEW|DUPLICATE|SUPERSEDES)(?:\s*[:：#]?\s*(\d+))?\s*$", re.IGNORECASE)

DEDUP_PROMPT = """你在维护一个 A 股投资者的长期记忆库。判断【新记忆】与【已有记忆】的关系，只输出一行：
- NEW：新记忆表达了已有记忆里没有的信息；
- DUPLICATE <id>：新记忆与某条已有记忆意思相同（只是措辞不同）；
- SUPERSEDES <id>：新记忆与某条已有记忆是同一主题、同一股票，但观点已经改变，应取代它。
只输出 NEW、DUPLICATE <id> 或 SUPERSEDES <id>，不要解释。"""

AskModel = Callable[[str, str], str]  # (system prompt, user text) -> reply text
Status = Literal["written", "duplicate", "skipped"]


@dataclass
class AddOutcome:
    status: Status
    memory_id: int | None = None
    duplicate_of: int | None = None
    superseded: int | None = None
    reason: str = ""

    def sentence(self) -> str:
        """What happened, in one Chinese sentence."""
        if self.status == "written":
            return f"已记住（记忆 {self.memory_id}）。"
        if self.status == "duplicate":
            return f"已有相同或相似的记忆 {self.duplicate_of}，没有重复写入。"
        return f"没有写入：{self.reason}。"


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = PUNCTUATION.sub("", text)
    return text.removeprefix("用户")


def similarity(a: str, b: str) -> float:
    """Dice coefficient over the character bigrams of the normalised texts."""
    left, right = _pairs(normalise(a)), _pairs(normalise(b))
    if not left or not right:
        return 1.0 if normalise(a) == normalise(b) else 0.0
    return 2 * len(left & right) / (len(left) + len(right))


def _pairs(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)} or ({text} if text else set())


def near_duplicate(content: str, existing: list[Memory]) -> Memory | None:
    key = normalise(content)
    for memory in existing:
        if normalise(memory.content) == key or similarity(content, memory.content) >= (
            SIMILARITY_DUPLICATE
        ):
            return memory
    return None


def ask_model_verdict(
    ask: AskModel, content: str, candidates: list[Memory]
) -> tuple[str, int | None]:
    """('new' | 'duplicate' | 'supersedes', id); raises ValueError on anything unusable."""
    listing = "\n".join(f"{m.id}: {m.content}" for m in candidates)
    reply = ask(DEDUP_PROMPT, f"【已有记忆】\n{listing}\n\n【新记忆】\n{content}")
    lines = [line for line in reply.strip().splitlines() if line.strip()]
    match = VERDICT.match(lines[0]) if len(lines) == 1 else None
    if match is None:
        raise ValueError(f"去重判断的回答无法识别：{reply[:80]!r}")
    verdict, number = match.group(1).lower(), match.group(2)
    if verdict == "new":
        return "new", None
    known = {m.id for m in candidates}
    if number is None or int(number) not in known:
        raise ValueError(f"去重判断引用了不存在的记忆 {number}")
    return verdict, int(number)


def add_memory(
    memories: MemoryStore,
    memory_type: str,
    content: str,
    *,
    provenance: str,
    ask: AskModel | None = None,
    source_ref: str = "",
    metadata: dict | None = None,
) -> AddOutcome:
    """Write `content` (keys masked) unless it is about permissions or tool policy or it
    duplicates a memory of its type. `ask` None: the deterministic stage only (an explicit
    add by the user); otherwise both stages."""
    content = clean_content(content)
    if not content:
        return AddOutcome("skipped", reason="内容为空")
    phrase = policy_phrase(content)
    if phrase is not None:
        return AddOutcome("skipped", reason=refusal(phrase))
    existing = memories.latest((memory_type,), limit=200)
    twin = near_duplicate(content, existing)
    if twin is not None:
        return AddOutcome("duplicate", duplicate_of=twin.id, reason="与已有记忆高度相似")
    codes = resolve_codes(content)
    if memory_type == "stock_opinion" and not codes:
        return AddOutcome("skipped", reason="个股观点要写出股票名称或 6 位代码")
    supersedes = None
    candidates = existing[:MODEL_CANDIDATES]
    if ask is not None and candidates:
        try:
            verdict, target = ask_model_verdict(ask, content, candidates)
        except Exception as exc:  # any failure: skip rather than write an unchecked memory
            return AddOutcome("skipped", reason=f"语义去重失败，未写入：{exc}")
        if verdict == "duplicate":
            return AddOutcome("duplicate", duplicate_of=target, reason="模型判定为重复")
        if verdict == "supersedes":
            old = next(m for m in candidates if m.id == target)
            if sorted(old.codes) != sorted(codes):
                return AddOutcome("skipped", reason="取代的记忆涉及的股票不同，未写入")
            supersedes = target
    memory_id = memories.insert(
        memory_type,
        content,
        codes=codes,
        source_ref=source_ref,
        metadata=metadata,
        supersedes=supersedes,
        provenance=provenance,
    )
    return AddOutcome("written", memory_id=memory_id, superseded=supersedes)
