"""Claude over the official `anthropic` SDK: streaming tool use, thinking, prompt caching.

Anthropic accepts at most 4 `cache_control` breakpoints per request. We place them on the
last tool definition, the end of the system prompt, the last block of the newest message
(rolling), and — when the newest exchange added more than BRIDGE_AFTER_BLOCKS blocks, beyond
the ~20-block cache lookback — on the block where the previous request ended, so that
prefix is still found. Thinking blocks and empty text are never marked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from wyckoff.cli.messages import (
    AssistantMessage,
    Message,
    RedactedThinkingBlock,
    ThinkingBlock,
    ToolCall,
)
from wyckoff.cli.providers.base import (
    Chunk,
    IncompleteResponse,
    LLMProvider,
    ProviderError,
    ToolSchema,
    parse_json_args,
    token_usage,
)

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import MessageDeltaUsage, RawContentBlockDelta, RawMessageStreamEvent
    from anthropic.types import Usage as ClaudeUsage

EPHEMERAL = {"type": "ephemeral"}
BRIDGE_AFTER_BLOCKS = 15
UNMARKABLE_BLOCKS = ("thinking", "redacted_thinking")
# Our usage field -> the name Claude reports it under.
USAGE_FIELDS: dict[
    Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"], str
] = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_write_tokens": "cache_creation_input_tokens",
}


class ClaudeProvider(LLMProvider):
    wire_format = "claude"

    def _make_client(self) -> anthropic.Anthropic:
        import anthropic

        return anthropic.Anthropic(
            api_key=self.config.resolved_api_key() or "missing-key",
            base_url=self.config.base_url,
            max_retries=self.sdk_retries,
            timeout=self.http_timeout(anthropic.Timeout),
            http_client=self.plain_http_client(anthropic.DefaultHttpxClient),
        )

    def _stream(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> Iterator[Chunk]:
        request = self.build_request(messages, tools, system_prompt)
        stream = self._client.messages.create(**request, stream=True)
        with stream:
            yield from _StreamReader().read(stream)

    def build_request(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> dict[str, Any]:
        wire_messages = to_claude_messages(messages)
        wire_tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in tools
        ]
        system = [{"type": "text", "text": system_prompt}] if system_prompt else []
        place_cache_breakpoints(system, wire_tools, wire_messages)
        request: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.max_output_tokens,
            "messages": wire_messages,
        }
        if system:
            request["system"] = system
        if wire_tools:
            request["tools"] = wire_tools
        budget = self.config.thinking_budget_tokens
        if budget:
            request["thinking"] = {"type": "enabled", "budget_tokens": budget}
            request["max_tokens"] = max(self.max_output_tokens, budget + 4096)
        return request

    def _describe_error(self, exc: Exception) -> ProviderError:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            detail = _error_detail(exc.body) or exc.message
            if exc.status_code == 200:  # an `error` event after the stream started
                return self.stream_error(detail)
            return self.http_error(exc.status_code, detail)
        if isinstance(exc, anthropic.APITimeoutError):
            return self.timeout_error(exc)
        if isinstance(exc, anthropic.APIConnectionError):
            return self.connection_error(str(exc.__cause__ or exc))
        return self.stream_error(f"{type(exc).__name__}: {exc}")


class _StreamReader:
    """Turns the raw SSE events into chunks and keeps the blocks Claude needs back."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage = token_usage()

    def read(self, stream: Iterable[RawMessageStreamEvent]) -> Iterator[Chunk]:
        for event in stream:
            if event.type == "message_start":
                self._take_usage(event.message.usage)
            elif event.type == "content_block_start":
                self.blocks[event.index] = event.content_block.model_dump(exclude_none=True)
                self.blocks[event.index].setdefault("_json", "")
            elif event.type == "content_block_delta":
                chunk = self._delta(event.index, event.delta)
                if chunk:
                    yield chunk
            elif event.type == "message_delta" and event.usage is not None:
                self._take_usage(event.usage)
            elif event.type == "message_stop":
                break
        else:  # the stream ended without message_stop
            raise IncompleteResponse()
        calls: list[ToolCall] = [
            {"id": b["id"], "name": b["name"], "args": parse_json_args(b["_json"])}
            for _, b in sorted(self.blocks.items())
            if b["type"] == "tool_use"
        ]
        if calls:
            yield {"type": "tool_calls", "calls": calls}
        thinking = [
            _clean_thinking(b)
            for _, b in sorted(self.blocks.items())
            if b["type"] in UNMARKABLE_BLOCKS
        ]
        if thinking:
            yield {
                "type": "provider_data",
                "data": {"provider": "claude", "thinking_blocks": thinking},
            }
        yield {"type": "usage", **self.usage}

    def _delta(self, index: int, delta: RawContentBlockDelta) -> Chunk | None:
        block = self.blocks.setdefault(index, {"type": "text", "_json": ""})
        if delta.type == "text_delta":
            return {"type": "text_delta", "text": delta.text}
        if delta.type == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
            return {"type": "thinking_delta", "text": delta.thinking}
        if delta.type == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.signature
        elif delta.type == "input_json_delta":
            block["_json"] += delta.partial_json
        return None

    def _take_usage(self, usage: ClaudeUsage | MessageDeltaUsage) -> None:
        for ours, theirs in USAGE_FIELDS.items():
            value = getattr(usage, theirs, None)
            if value is not None:
                self.usage[ours] = value


def _clean_thinking(block: dict[str, Any]) -> ThinkingBlock | RedactedThinkingBlock:
    if block["type"] == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    return {
        "type": "thinking",
        "thinking": block.get("thinking", ""),
        "signature": block.get("signature", ""),
    }


def _error_detail(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return f"{error.get('type', '')}: {error.get('message', '')}".strip(": ")
    return ""


# --- message conversion -------------------------------------------------------------------


def to_claude_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Internal messages -> Anthropic messages, merging tool results into one user turn."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "assistant":
            wire.append({"role": "assistant", "content": _assistant_blocks(message)})
            continue
        block: dict[str, Any]
        if message["role"] == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message.get("content") or "(空结果)",
            }
        else:
            block = {"type": "text", "text": message.get("content") or "(空)"}
        if wire and wire[-1]["role"] == "user":
            wire[-1]["content"].append(block)
        else:
            wire.append({"role": "user", "content": [block]})
    return wire


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    data = message.get("provider_data")
    if data is not None and data["provider"] == "claude":
        blocks += [dict(b) for b in data["thinking_blocks"]]
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        args = call.get("args") or {}
        if "__malformed_arguments__" in args:
            args = {}
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": args})
    return blocks or [{"type": "text", "text": "(空)"}]


def place_cache_breakpoints(system: list[dict], tools: list[dict], wire: list[dict]) -> int:
    """Mark at most 4 cache breakpoints in place; returns how many were placed."""
    placed = 0
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
        placed += 1
    if system:
        system[-1]["cache_control"] = EPHEMERAL
        placed += 1
    blocks = [block for message in wire for block in message["content"]]
    if _mark_last_markable(blocks):
        placed += 1
    bridge_end = _previous_request_end(wire)
    needs_bridge = bridge_end is not None and len(blocks) - bridge_end > BRIDGE_AFTER_BLOCKS
    if needs_bridge and _mark_last_markable(blocks[:bridge_end]):
        placed += 1
    return placed


def _mark_last_markable(blocks: list[dict]) -> bool:
    for block in reversed(blocks):
        if block.get("cache_control"):
            return False
        if block["type"] in UNMARKABLE_BLOCKS or (
            block["type"] == "text" and not block["text"].strip()
        ):
            continue
        block["cache_control"] = EPHEMERAL
        return True
    return False


def _previous_request_end(wire: list[dict]) -> int | None:
    """Block count up to where the previous request ended: before the last assistant turn."""
    assistants = [i for i, m in enumerate(wire) if m["role"] == "assistant"]
    if not assistants:
        return None
    return sum(len(m["content"]) for m in wire[: assistants[-1]])
