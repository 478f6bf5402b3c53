"""Who wrote a conversation message, and what a user's short answer means.

Messages the program writes in the user's role (a background task's notification, the loop
guard's retry prompt, a compaction summary) carry `meta.kind`: code recognises them by that,
never by how their text starts. The text the model reads is unchanged.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

# Written by the program, not by the user: never a question, a title or the turn's request.
MessageKind = Literal["notification", "tool_retry", "compaction_summary"]
KINDS: tuple[MessageKind, ...] = get_args(MessageKind)

# A yes to a question (consent to one action, or "go on" to a proposed diagnosis).
AFFIRMATIVE_ANSWERS = frozenset(
    {
        "确认",
        "同意",
        "允许",
        "执行",
        "继续",
        "可以",
        "要",
        "需要",
        "行",
        "好",
        "好的",
        "好啊",
        "是",
        "是的",
        "嗯",
        "对",
        "来吧",
        "yes",
        "y",
        "ok",
        "okay",
        "sure",
        "allow",
    }
)
ANSWER_PUNCTUATION = "。！!，,~～ .…"  # not "?": "好？" asks, it does not agree


def synthetic(kind: MessageKind, content: str) -> dict[str, Any]:
    """A user-role message of the given kind."""
    return {"role": "user", "content": content, "meta": {"kind": kind}}


def kind_of(message: dict[str, Any]) -> MessageKind | None:
    return (message.get("meta") or {}).get("kind")


def shown_text(message: dict[str, Any]) -> str:
    """A message as the user typed it (a /skill call without the instruction added to it)."""
    return (message.get("meta") or {}).get("shown") or str(message.get("content") or "")


def is_user_words(message: dict[str, Any]) -> bool:
    """A user-role message the user typed (a /skill call included), not one the program wrote."""
    return message.get("role") == "user" and kind_of(message) is None


def is_affirmative(answer: str) -> bool:
    return answer.strip().lower().strip(ANSWER_PUNCTUATION) in AFFIRMATIVE_ANSWERS
