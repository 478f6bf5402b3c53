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

# A yes that consents to one exact risky action (ask_user): only unambiguous words.
CONSENT_ANSWERS = frozenset(
    {"确认", "同意", "继续", "允许", "可以", "好的", "好", "是", "是的", "执行"}
    | {"yes", "y", "ok", "allow"}
)
# A go-ahead to a proposed analysis (the loop guard): consent words and casual ones.
GO_AHEAD_ANSWERS = CONSENT_ANSWERS | {
    "要",
    "需要",
    "行",
    "好啊",
    "嗯",
    "对",
    "来吧",
    "okay",
    "sure",
}
CONSENT_PUNCTUATION = "。！!. "
GO_AHEAD_PUNCTUATION = "。！!，,~～ .…"  # never "?": "好？" asks, it does not agree


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


def is_consent(answer: str) -> bool:
    """Whether an answer to "may I do X?" is a clear yes."""
    return answer.strip().lower().strip(CONSENT_PUNCTUATION) in CONSENT_ANSWERS


def is_go_ahead(answer: str) -> bool:
    """Whether an answer to "shall I analyse …?" asks for it."""
    return answer.strip().lower().strip(GO_AHEAD_PUNCTUATION) in GO_AHEAD_ANSWERS
