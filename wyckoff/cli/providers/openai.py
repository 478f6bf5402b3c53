"""OpenAI-compatible chat.completions over the official `openai` SDK.

Serves OpenAI, DeepSeek, Qwen, Kimi, Ollama, vLLM and other compatible endpoints:
- optional parameters an endpoint rejects (a 400 that names them) are dropped one by one
  and remembered for the life of the provider;
- `reasoning_content` is streamed as thinking and sent back on every assistant turn once
  the conversation has any (DeepSeek thinking mode with tools requires it);
- tool calls written as `<tool_call>{...}</tool_call>` text become real calls;
- Ollama's several calls all at index 0 are told apart by their new ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from wyckoff.cli.messages import AssistantMessage, Message, ToolCall
from wyckoff.cli.providers.base import (
    AssistantFields,
    Chunk,
    IncompleteResponse,
    LLMProvider,
    ProviderError,
    ToolSchema,
    parse_json_args,
    token_usage,
)
from wyckoff.token_usage import TokenUsage

if TYPE_CHECKING:
    import openai
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall

    from wyckoff.config import ModelConfig

DROPPABLE_PARAMS = ("stream_options", "tool_choice", "parallel_tool_calls", "max_tokens")
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"


class OpenAIProvider(LLMProvider):
    wire_format = "openai"

    def __init__(
        self, config: ModelConfig, *, context_window: int, stream_timeout_s: float = 60.0
    ) -> None:
        super().__init__(config, context_window=context_window, stream_timeout_s=stream_timeout_s)
        self.unsupported_params: set[str] = set()

    def _make_client(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(
            api_key=self.config.resolved_api_key() or "missing-key",
            base_url=self.config.base_url,
            max_retries=self.sdk_retries,
            timeout=self.http_timeout(openai.Timeout),
            http_client=self.plain_http_client(openai.DefaultHttpxClient),
        )

    def assistant_fields(self, thinking: str) -> AssistantFields:
        """DeepSeek's thinking mode with tools wants its reasoning back on the next request."""
        return {"reasoning_content": thinking}

    def build_request(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": to_openai_messages(messages, system_prompt),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["parameters"],
                    },
                }
                for t in tools
            ]
            request["tool_choice"] = "auto"
        if self.config.max_output_tokens:
            request["max_tokens"] = self.config.max_output_tokens
        for name in self.unsupported_params:
            request.pop(name, None)
        return request

    def _stream(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> Iterator[Chunk]:
        stream = self._open_stream(messages, tools, system_prompt)
        with stream:
            yield from _StreamReader().read(stream)

    def _open_stream(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> openai.Stream[ChatCompletionChunk]:
        """Create the stream, dropping parameters the endpoint says it does not support."""
        import openai

        while True:
            request = self.build_request(messages, tools, system_prompt)
            try:
                stream: openai.Stream[ChatCompletionChunk] = self._client.chat.completions.create(
                    **request
                )
                return stream
            except openai.BadRequestError as exc:
                rejected = _rejected_param(
                    str(exc.message) + json.dumps(exc.body, default=str), request
                )
                if rejected is None:
                    raise
                self.unsupported_params.add(rejected)

    def _describe_error(self, exc: Exception) -> ProviderError:
        import openai

        if isinstance(exc, openai.APIStatusError):
            return self.http_error(exc.status_code, _error_detail(exc.body) or exc.message)
        if isinstance(exc, openai.APITimeoutError):
            return self.timeout_error(exc)
        if isinstance(exc, openai.APIConnectionError):
            return self.connection_error(str(exc.__cause__ or exc))
        if isinstance(exc, openai.APIError):  # an error object inside a 200 stream
            return self.stream_error(_error_detail(exc.body) or exc.message)
        return self.stream_error(f"{type(exc).__name__}: {exc}")


def _rejected_param(error_text: str, request: dict[str, Any]) -> str | None:
    lowered = error_text.lower()
    for name in DROPPABLE_PARAMS:
        if name in request and name in lowered:
            return name
    return None


def _error_detail(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("code") or "")
        return str(error)
    return ""


class _StreamReader:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.call_at_index: dict[int, dict[str, Any]] = {}
        self.text_filter = TextToolCallFilter()
        self.usage: TokenUsage | None = None
        self.finished = False

    def read(self, stream: Iterable[ChatCompletionChunk]) -> Iterator[Chunk]:
        for chunk in stream:
            if chunk.usage is not None:
                self.usage = _usage(chunk.usage)
            for choice in chunk.choices or []:
                yield from self._delta(choice.delta)
                self.finished = self.finished or choice.finish_reason is not None
        if not self.finished:  # a complete stream always ends its choice with a finish_reason
            raise IncompleteResponse()
        tail, text_calls = self.text_filter.finish()
        if tail:
            yield {"type": "text_delta", "text": tail}
        calls: list[ToolCall] = [
            {"id": c["id"], "name": c["name"], "args": parse_json_args(c["arguments"])}
            for c in self.calls
            if c["name"]
        ]
        calls += text_calls
        if calls:
            yield {"type": "tool_calls", "calls": calls}
        yield {"type": "usage", **(self.usage or token_usage())}

    def _delta(self, delta: ChoiceDelta | None) -> Iterator[Chunk]:
        if delta is None:
            return
        extra = delta.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        if reasoning:
            yield {"type": "thinking_delta", "text": reasoning}
        if delta.content:
            visible = self.text_filter.feed(delta.content)
            if visible:
                yield {"type": "text_delta", "text": visible}
        for fragment in delta.tool_calls or []:
            self._take_fragment(fragment)

    def _take_fragment(self, fragment: ChoiceDeltaToolCall) -> None:
        index = fragment.index or 0
        current = self.call_at_index.get(index)
        # Ollama streams several whole calls at index 0: a new id there is a new call.
        if current is None or (fragment.id and current["id"] and fragment.id != current["id"]):
            current = {"id": fragment.id or f"call_{len(self.calls)}", "name": "", "arguments": ""}
            self.calls.append(current)
            self.call_at_index[index] = current
        function = fragment.function
        if function is not None:
            if function.name:
                current["name"] += function.name
            if function.arguments:
                current["arguments"] += function.arguments


def _usage(usage: CompletionUsage) -> TokenUsage:
    prompt = usage.prompt_tokens or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or (usage.model_extra or {}).get(
        "prompt_cache_hit_tokens", 0
    )
    return token_usage(
        input_tokens=max(prompt - (cached or 0), 0),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached or 0,
    )


class TextToolCallFilter:
    """Holds back `<tool_call>...</tool_call>` text and parses it into real calls."""

    def __init__(self) -> None:
        self.buffer = ""
        self.held = ""

    def feed(self, text: str) -> str:
        if self.held:
            self.held += text
            return ""
        self.buffer += text
        start = self.buffer.find(TOOL_CALL_OPEN)
        if start >= 0:
            visible, self.held = self.buffer[:start], self.buffer[start:]
            self.buffer = ""
            return visible
        keep = _partial_prefix_length(self.buffer, TOOL_CALL_OPEN)
        visible = self.buffer[: len(self.buffer) - keep]
        self.buffer = self.buffer[len(self.buffer) - keep :]
        return visible

    def finish(self) -> tuple[str, list[ToolCall]]:
        """The text still held back (anything that was not a valid call) and the calls."""
        calls: list[ToolCall] = []
        text, rest = self.buffer, self.held
        while rest:
            before, found, after = rest.partition(TOOL_CALL_OPEN)
            text += before
            if not found:
                break
            body, _, rest = after.partition(TOOL_CALL_CLOSE)
            call = _parse_text_call(body, len(calls))
            if call is None:
                text += TOOL_CALL_OPEN + body
            else:
                calls.append(call)
        return text, calls


def _parse_text_call(body: str, position: int) -> ToolCall | None:
    try:
        data = json.loads(body.strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):
        args = parse_json_args(args)
    return {
        "id": f"call_text_{position}",
        "name": data["name"],
        "args": args if isinstance(args, dict) else {},
    }


def _partial_prefix_length(text: str, marker: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `marker`."""
    for length in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:length]):
            return length
    return 0


# --- message conversion -------------------------------------------------------------------


def to_openai_messages(messages: Sequence[Message], system_prompt: str) -> list[dict[str, Any]]:
    send_reasoning = any(m["role"] == "assistant" and m.get("reasoning_content") for m in messages)
    wire: list[dict[str, Any]] = []
    if system_prompt:
        wire.append({"role": "system", "content": system_prompt})
    for message in messages:
        if message["role"] == "assistant":
            wire.append(_assistant_message(message, send_reasoning))
        elif message["role"] == "tool":
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message["tool_call_id"],
                    "content": message.get("content") or "",
                }
            )
        else:
            wire.append({"role": "user", "content": message.get("content") or ""})
    return wire


def _assistant_message(message: AssistantMessage, send_reasoning: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or None}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": _arguments_text(call.get("args") or {}),
                },
            }
            for call in calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    if send_reasoning:
        out["reasoning_content"] = message.get("reasoning_content") or ""
    return out


def _arguments_text(args: dict[str, Any]) -> str:
    if "__malformed_arguments__" in args:
        return str(args["__malformed_arguments__"])
    return json.dumps(args, ensure_ascii=False)
