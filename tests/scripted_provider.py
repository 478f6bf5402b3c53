"""An in-process provider that plays a script of replies: fast unit tests of the runtime loop.

It yields the same Chunk stream a real adapter yields (text in pieces, thinking, tool calls
whose arguments did not parse kept as `__malformed_arguments__`, usage last) through the base
class's `chat_stream`, so the stall timer and cancellation are the real ones. It takes the
same `Reply` script as the loopback servers in tests/model_servers.py, with the same meaning
for text, thinking, tool_calls, usage, pieces, piece_delay_s, raw_arguments and hold; the
fields about HTTP and SDK wire formats are for those servers only. Tests of what goes over the
wire stay on the servers.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

from tests.model_servers import Reply
from wyckoff.cli.providers.base import Chunk, LLMProvider, parse_json_args, token_usage
from wyckoff.config import ModelConfig


class ScriptedProvider(LLMProvider):
    """Answers each request with the next scripted Reply; records what it was sent."""

    wire_format = "openai"  # the internal message format; no SDK client is built

    def __init__(self, *replies: Reply, stream_timeout_s: float = 5.0) -> None:
        config = ModelConfig(id="scripted", provider="openai", model="scripted-model")
        super().__init__(config, context_window=128_000, stream_timeout_s=stream_timeout_s)
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def _stream(self, messages, tools, system_prompt) -> Iterator[Chunk]:
        self.requests.append(
            {
                "messages": copy.deepcopy(messages),
                "tools": [tool["name"] for tool in tools],
                "system_prompt": system_prompt,
            }
        )
        if not self.replies:
            raise AssertionError("the scripted provider ran out of replies")
        reply = self.replies.pop(0)
        if reply.hold is not None:
            reply.hold.wait(timeout=120)
        if reply.thinking:
            yield {"type": "thinking_delta", "text": reply.thinking}
        yield from self._text(reply)
        if reply.tool_calls:
            yield {"type": "tool_calls", "calls": list(self._calls(reply))}
        input_tokens, output_tokens, cache_read, cache_write = reply.usage
        yield {
            "type": "usage",
            **token_usage(input_tokens, output_tokens, cache_read, cache_write),
        }

    def _text(self, reply: Reply) -> Iterator[Chunk]:
        """The text in `reply.pieces` deltas, `piece_delay_s` apart."""
        if not reply.text:
            return
        size = max(1, -(-len(reply.text) // reply.pieces))
        for start in range(0, len(reply.text), size):
            if start and reply.piece_delay_s:
                time.sleep(reply.piece_delay_s)
            yield {"type": "text_delta", "text": reply.text[start : start + size]}

    def _calls(self, reply: Reply) -> Iterator[dict[str, Any]]:
        number = len(self.requests)
        for index, (name, args) in enumerate(reply.tool_calls):
            if reply.raw_arguments is not None:
                args = parse_json_args(reply.raw_arguments)
            yield {"id": f"call_{number}_{index}", "name": name, "args": args}
