"""A conversation message: its shape, who wrote it, and what a user's short answer means.

`Message` is the one internal format every provider converts from (OpenAI-like, one
TypedDict per role), the chat log stores and compaction rewrites. There is no system role:
the system prompt travels beside the history and each provider places it on the wire.

Messages the program writes in the user's role (a background task's notification, the loop
guard's retry prompt, a compaction summary) carry `meta.kind`: code recognises them by that,
never by how their text starts. The text the model reads is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, NotRequired, Protocol, TypedDict, get_args, overload

# Written by the program, not by the user: never a question, a title or the turn's request.
MessageKind = Literal["notification", "tool_retry", "compaction_summary"]
KINDS: tuple[MessageKind, ...] = get_args(MessageKind)


class ToolCall(TypedDict):
    id: str
    name: str
    args: dict[str, Any]  # {"__malformed_arguments__": raw} when the JSON did not parse


class UserMeta(TypedDict, total=False):
    kind: MessageKind  # the program wrote it (absent: the user did)
    shown: str  # what the user typed, when the content adds an instruction (a /skill call)


class AssistantMeta(TypedDict, total=False):
    model: str
    provider: str
    input_tokens: int  # cached and uncached together
    output_tokens: int
    elapsed_s: float


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    type: Literal["redacted_thinking"]
    data: str


class ClaudeReplay(TypedDict):
    provider: Literal["claude"]
    thinking_blocks: list[ThinkingBlock | RedactedThinkingBlock]


class GeminiReplay(TypedDict):
    provider: Literal["gemini"]
    parts: list[dict[str, Any]]  # the model's parts as the SDK dumps them, signatures included


# What one provider needs back, byte for byte, on its next request; the others ignore it.
ProviderReplay = ClaudeReplay | GeminiReplay


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str
    meta: NotRequired[UserMeta]


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str
    tool_calls: NotRequired[list[ToolCall]]
    reasoning_content: NotRequired[str]  # thinking an OpenAI-compatible model wants back
    provider_data: NotRequired[ProviderReplay]
    meta: NotRequired[AssistantMeta]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    name: str
    content: str


Message = UserMessage | AssistantMessage | ToolMessage


class History(Protocol):
    """The messages a turn works on and appends to: a plain list, or a chat log's
    Conversation, which saves each message as it is appended."""

    def append(self, message: Message, /) -> None: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Message]: ...

    @overload
    def __getitem__(self, index: int, /) -> Message: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[Message]: ...


def tool_calls_of(message: Message) -> list[ToolCall]:
    """The calls an assistant message makes (none for any other message)."""
    return (message.get("tool_calls") or []) if message["role"] == "assistant" else []


def reasoning_of(message: Message) -> str:
    """The thinking an assistant message carries back to its model ("" for any other)."""
    return (message.get("reasoning_content") or "") if message["role"] == "assistant" else ""


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


def synthetic(kind: MessageKind, content: str) -> UserMessage:
    """A user-role message of the given kind."""
    return {"role": "user", "content": content, "meta": {"kind": kind}}


def kind_of(message: Message) -> MessageKind | None:
    """Who wrote a user-role message: None when the user did (and for every other role)."""
    return (message.get("meta") or {}).get("kind") if message["role"] == "user" else None


def shown_text(message: Message) -> str:
    """A message as the user typed it (a /skill call without the instruction added to it)."""
    shown = (message.get("meta") or {}).get("shown") if message["role"] == "user" else None
    return shown or str(message.get("content") or "")


def is_user_words(message: Message) -> bool:
    """A user-role message the user typed (a /skill call included), not one the program wrote."""
    return message.get("role") == "user" and kind_of(message) is None


def is_consent(answer: str) -> bool:
    """Whether an answer to "may I do X?" is a clear yes."""
    return answer.strip().lower().strip(CONSENT_PUNCTUATION) in CONSENT_ANSWERS


def is_go_ahead(answer: str) -> bool:
    """Whether an answer to "shall I analyse …?" asks for it."""
    return answer.strip().lower().strip(GO_AHEAD_PUNCTUATION) in GO_AHEAD_ANSWERS
