"""Gemini over the official `google-genai` SDK.

Function calls arrive as whole parts; the model's parts (with their thought signatures) are
kept verbatim in `provider_data` and sent back exactly, since Gemini 3 answers 400 when a
signature is missing. Calls written by another model (after a fallback switch) carry the
documented placeholder signature instead. Automatic function calling is off: the runtime
runs the tools.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from wyckoff.cli.messages import AssistantMessage, Message, ToolCall, ToolMessage
from wyckoff.cli.providers.base import (
    Chunk,
    IncompleteResponse,
    LLMProvider,
    ProviderError,
    ToolSchema,
    token_usage,
    too_deep,
)
from wyckoff.token_usage import TokenUsage

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

FOREIGN_CALL_SIGNATURE = b"skip_thought_signature_validator"
GENERATED_ID_PREFIX = "gemini_call_"
RETRY_INITIAL_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 8.0


class GeminiProvider(LLMProvider):
    wire_format = "gemini"

    def _make_client(self) -> genai.Client:
        from google import genai
        from google.genai import types

        # The SDK ignores retry-after; back off as the other SDKs do when none is sent.
        retries = types.HttpRetryOptions(
            attempts=self.sdk_retries + 1,
            initial_delay=RETRY_INITIAL_DELAY_S,
            max_delay=RETRY_MAX_DELAY_S,
            jitter=RETRY_INITIAL_DELAY_S,
        )
        options = types.HttpOptions(
            timeout=int((self.stream_timeout_s + 30) * 1000), retry_options=retries
        )
        if self.config.base_url:
            options.base_url = self.config.base_url
        # Keep this reference: a temporary Client closes its transport when collected.
        return genai.Client(
            api_key=self.config.resolved_api_key() or "missing-key", http_options=options
        )

    def build_request(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> dict[str, Any]:
        from google.genai import types

        config = types.GenerateContentConfig(
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            max_output_tokens=self.config.max_output_tokens,
        )
        if system_prompt:
            config.system_instruction = system_prompt
        if tools:
            config.tools = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=t["name"],
                            description=t["description"],
                            parameters_json_schema=t["parameters"],
                        )
                        for t in tools
                    ]
                )
            ]
        if self.config.thinking_budget_tokens:
            config.thinking_config = types.ThinkingConfig(
                include_thoughts=True, thinking_budget=self.config.thinking_budget_tokens
            )
        return {
            "model": self.config.model,
            "contents": to_gemini_contents(messages),
            "config": config,
        }

    def _stream(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> Iterator[Chunk]:
        request = self.build_request(messages, tools, system_prompt)
        stream = self._client.models.generate_content_stream(**request)
        parts: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        usage = token_usage()
        finished = False
        for response in stream:
            if response.usage_metadata is not None:
                usage = _usage(response.usage_metadata)
            for candidate in response.candidates or []:
                finished = finished or candidate.finish_reason is not None
                for part in (candidate.content.parts if candidate.content else None) or []:
                    parts.append(part.model_dump(mode="json", exclude_none=True))
                    chunk = _part_chunk(part, calls)
                    if chunk:
                        yield chunk
        if not finished:  # the last chunk of a complete stream carries a finishReason
            raise IncompleteResponse()
        if calls:
            yield {"type": "tool_calls", "calls": calls}
        if parts:
            yield {"type": "provider_data", "data": {"provider": "gemini", "parts": parts}}
        yield {"type": "usage", **usage}

    def _describe_error(self, exc: Exception) -> ProviderError:
        import httpx
        from google.genai import errors

        if isinstance(exc, errors.UnknownApiResponseError):  # e.g. an HTML page with status 200
            return self.incomplete_error()
        if isinstance(exc, errors.APIError):
            detail = exc.message or exc.status or ""
            if exc.code == 200 or not exc.code:
                return self.stream_error(detail)
            return self.http_error(exc.code, str(detail))
        if isinstance(exc, httpx.TimeoutException):
            return self._stall_error()
        if isinstance(exc, httpx.TransportError):
            return self.connection_error(str(exc) or type(exc).__name__)
        return self.stream_error(f"{type(exc).__name__}: {exc}")


def _bounded(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments nested too deeply for the later steps are reported, not passed on."""
    return {"__malformed_arguments__": "[[[…"} if too_deep(args) else args


def _part_chunk(part: types.Part, calls: list[ToolCall]) -> Chunk | None:
    if part.function_call is not None:
        call = part.function_call
        calls.append(
            {
                "id": call.id or f"{GENERATED_ID_PREFIX}{uuid.uuid4().hex[:12]}",
                "name": call.name or "",  # optional in the SDK: no name, an unknown tool
                "args": _bounded(dict(call.args or {})),
            }
        )
        return None
    if part.text and part.thought:
        return {"type": "thinking_delta", "text": part.text}
    if part.text:
        return {"type": "text_delta", "text": part.text}
    return None


def _usage(meta: types.GenerateContentResponseUsageMetadata) -> TokenUsage:
    cached = meta.cached_content_token_count or 0
    return token_usage(
        input_tokens=max((meta.prompt_token_count or 0) - cached, 0),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )


# --- message conversion -------------------------------------------------------------------


def to_gemini_contents(messages: Sequence[Message]) -> list[types.Content]:
    from google.genai import types

    turns: list[tuple[str, list[types.Part]]] = []
    for message in messages:
        if message["role"] == "assistant":
            turns.append(("model", _model_parts(message)))
            continue
        if message["role"] == "tool":
            part = types.Part(function_response=_function_response(message))
        else:
            part = types.Part(text=message.get("content") or "(空)")
        if turns and turns[-1][0] == "user":
            turns[-1][1].append(part)
        else:
            turns.append(("user", [part]))
    return [types.Content(role=role, parts=parts) for role, parts in turns]


def _model_parts(message: AssistantMessage) -> list[types.Part]:
    from google.genai import types

    data = message.get("provider_data")
    if data is not None and data["provider"] == "gemini" and data["parts"]:
        return [types.Part.model_validate(p) for p in data["parts"]]
    parts = [types.Part(text=message["content"])] if message.get("content") else []
    for call in message.get("tool_calls") or []:
        args = call.get("args") or {}
        if "__malformed_arguments__" in args:
            args = {}
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=_wire_id(call["id"]), name=call["name"], args=args
                ),
                thought_signature=FOREIGN_CALL_SIGNATURE,
            )
        )
    return parts or [types.Part(text="(空)")]


def _function_response(message: ToolMessage) -> types.FunctionResponse:
    from google.genai import types

    content = message.get("content") or ""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = content
    response = value if isinstance(value, dict) else {"result": value}
    return types.FunctionResponse(
        id=_wire_id(message["tool_call_id"]), name=message.get("name") or "tool", response=response
    )


def _wire_id(call_id: str) -> str | None:
    """Ids we made up for Gemini calls without one are not sent back."""
    return None if call_id.startswith(GENERATED_ID_PREFIX) else call_id
