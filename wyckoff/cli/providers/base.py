"""The provider interface, the chunk stream it yields, and the errors it raises.

Every provider converts the one internal message format, `Message` (cli/messages.py):
user, assistant (with `tool_calls`, `reasoning_content` from `assistant_fields`,
`provider_data`) and tool messages.

`provider_data` carries, untouched, what one provider needs back on the next request
(Claude thinking blocks with signatures, Gemini parts with thought signatures); it is
tagged with the provider that wrote it and ignored by the others.

`chat_stream` yields `Chunk`s (plain dicts, the TypedDicts below); `StreamAccumulator`
assembles them into one reply. `provider_data` chunks are stored on the assistant message;
a `provider_switch` (fallback only) drops the partial output before it. Usage is spelled as
in the runtime's events; `input_tokens` counts only uncached input tokens, the total is
input_tokens + cache_read_tokens + cache_write_tokens.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NotRequired, TypedDict, TypeVar

from wyckoff.cli.messages import AssistantMessage, Message, ProviderReplay, ToolCall
from wyckoff.config import ModelConfig, redact_text, remember_secrets
from wyckoff.errors import WyckoffError
from wyckoff.token_usage import TokenUsage

ToolSchema = dict[str, Any]  # {"name", "description", "parameters": JSON Schema}
SdkTimeout = TypeVar("SdkTimeout")


class TextDelta(TypedDict):
    type: Literal["text_delta"]
    text: str


class ThinkingDelta(TypedDict):
    type: Literal["thinking_delta"]
    text: str


class ToolCalls(TypedDict):
    type: Literal["tool_calls"]
    calls: list[ToolCall]


class UsageChunk(TokenUsage):
    type: Literal["usage"]


class ProviderData(TypedDict):
    type: Literal["provider_data"]
    data: ProviderReplay


# "from" is a keyword, hence the functional form.
ProviderSwitch = TypedDict(
    "ProviderSwitch",
    {"type": Literal["provider_switch"], "from": str, "to": str, "reason": str},
)

Chunk = TextDelta | ThinkingDelta | ToolCalls | UsageChunk | ProviderData | ProviderSwitch


class Reply(TypedDict):
    """One whole model reply (`LLMProvider.chat`)."""

    text: str
    thinking: str
    tool_calls: list[ToolCall]
    usage: TokenUsage
    provider_data: NotRequired[ProviderReplay]


class AssistantFields(TypedDict, total=False):
    """What a provider adds to the assistant message it answered (`assistant_fields`)."""

    reasoning_content: str


def token_usage(
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> TokenUsage:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_tokens": cache_read_tokens,
        "cache_write_tokens": cache_write_tokens,
    }


RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
QUOTA_MARKERS = ("insufficient_quota", "quota", "billing", "spend limit", "余额")
DEFAULT_MAX_OUTPUT_TOKENS = 8192
POLL_S = 0.05
CONNECT_TIMEOUT_S = 5.0  # an unreachable host fails this fast, so the fallback takes over soon
# Without a fallback the SDK retries a 429/5xx (honouring retry-after) before we give up.
SDK_RETRIES = 2


class ProviderError(WyckoffError):
    """A model call failed. `retryable` says whether a fallback model may take over."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class IncompleteResponse(Exception):
    """The reply ended without the provider's end marker: cut off, or not an API reply."""


class LLMProvider:
    """Base of every provider adapter; subclasses implement `_make_client`, `_stream` and
    `_describe_error`."""

    wire_format = ""  # the API the adapter speaks: "claude", "openai" or "gemini"

    def __init__(self, config: ModelConfig, *, context_window: int, stream_timeout_s: float = 60.0):
        self._config = config
        remember_secrets(config.resolved_api_key())  # from whichever variable it came
        self._context_window = context_window
        self.stream_timeout_s = stream_timeout_s
        self.max_output_tokens = config.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        self.sdk_retries = SDK_RETRIES
        self._client = self._make_client()

    def fail_fast(self) -> None:
        """No SDK retries: a fallback model takes over a 429/5xx at once instead."""
        self.sdk_retries = 0
        self._client = self._make_client()

    # Read-only, so that the fallback wrapper can follow the active provider for each.
    @property
    def config(self) -> ModelConfig:
        return self._config

    @property
    def context_window(self) -> int:
        return self._context_window

    @property
    def provider(self) -> str:
        return self.wire_format

    @property
    def name(self) -> str:
        return self.config.id

    def http_timeout(self, timeout_class: Callable[..., SdkTimeout]) -> SdkTimeout:
        """The SDK's timeout (its own httpx class): connecting fails fast, reading waits."""
        return timeout_class(self.stream_timeout_s + 30, connect=CONNECT_TIMEOUT_S)

    def plain_http_client(self, default_client: Callable[..., Any]) -> Any | None:
        """For an http:// base URL, the SDK's HTTP client (`default_client`, its
        DefaultHttpxClient) without the CA bundle its default loads (25-45 ms of CPU per
        client) for TLS it never uses; None (the SDK's own) otherwise. Verification stays
        required, so a redirect to https fails rather than trusting any certificate."""
        if not (self.config.base_url or "").lower().startswith("http://"):
            return None
        import ssl

        return default_client(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def active(self) -> LLMProvider:
        """The provider actually answering (a fallback wrapper returns the one in use)."""
        return self

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        system_prompt: str = "",
        *,
        cancel_event: threading.Event | None = None,
    ) -> Iterator[Chunk]:
        """Stream one model reply. A silence over `stream_timeout_s` is a retryable error;
        setting `cancel_event` raises StreamCancelled at once."""
        source = self._guarded(messages, tools, system_prompt)
        yield from iter_with_timeout(source, self.stream_timeout_s, self._stall_error, cancel_event)

    def chat(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str = ""
    ) -> Reply:
        """One whole reply: {text, thinking, tool_calls, usage, provider_data (if any)}."""
        reply = StreamAccumulator()
        for chunk in self.chat_stream(messages, tools, system_prompt):
            reply.add(chunk)
        return reply.as_reply()

    def assistant_fields(self, thinking: str) -> AssistantFields:
        """Extra fields this provider needs on the assistant message it answered."""
        return {}

    def _guarded(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> Iterator[Chunk]:
        try:
            yield from self._stream(messages, tools, system_prompt)
        except ProviderError:
            raise
        except IncompleteResponse:
            raise self.incomplete_error() from None
        except Exception as exc:  # SDK errors of every kind become one clear sentence
            raise self._describe_error(exc) from None

    def _make_client(self) -> Any:
        """The SDK client, built with `sdk_retries` (None for a provider without an SDK)."""
        return None

    def _stream(
        self, messages: Sequence[Message], tools: list[ToolSchema], system_prompt: str
    ) -> Iterator[Chunk]:
        raise NotImplementedError

    def _describe_error(self, exc: Exception) -> ProviderError:
        raise NotImplementedError

    def _stall_error(self) -> ProviderError:
        return ProviderError(
            f"模型 {self.name} 超过 {self.stream_timeout_s:g} 秒没有任何输出，已中止这次请求。",
            retryable=True,
        )

    # --- shared error wording -----------------------------------------------------------

    def http_error(self, status: int, detail: str) -> ProviderError:
        """Turn an HTTP failure into the sentence a user can act on."""
        detail = self._clean(detail)
        name = self.name
        lowered = detail.lower()
        if status == 402 or (status == 429 and any(m in lowered for m in QUOTA_MARKERS)):
            return ProviderError(
                f"模型 {name} 的账户额度不足（HTTP {status}）：请充值或检查用量上限。{detail}",
                retryable=False,
                status=status,
            )
        if status in (401, 403):
            return ProviderError(
                f"模型 {name} 认证失败（HTTP {status}）：API key 无效或无权限。"
                f"请检查密钥来源（{self.config.key_source()}），或用 "
                f"`wyckoff model add {name} --provider {self.config.provider} --model "
                f"{self.config.model} --api-key ...` 重新设置。",
                retryable=False,
                status=status,
            )
        if status == 404:
            return ProviderError(
                f"模型 {name} 找不到模型 '{self.config.model}' 或接口地址（HTTP 404）："
                "请检查模型名和 base_url（`wyckoff model list`）。",
                retryable=False,
                status=status,
            )
        if status == 429:
            return ProviderError(
                f"模型 {name} 被限流（HTTP 429）：请稍后再试，或用 `wyckoff model fallback` 设置备用模型。",
                retryable=True,
                status=status,
            )
        if status in RETRYABLE_STATUSES or status >= 500:
            return ProviderError(
                f"模型 {name} 的服务暂时不可用（HTTP {status}）：请稍后再试。{detail}",
                retryable=True,
                status=status,
            )
        return ProviderError(
            f"模型 {name} 拒绝了请求（HTTP {status}）：{detail or '无详细说明'}",
            retryable=False,
            status=status,
        )

    def timeout_error(self, exc: Exception) -> ProviderError:
        """An SDK timeout: failing to connect is a connection error, else the model stalled."""
        if type(exc.__cause__).__name__ == "ConnectTimeout":  # httpx or the SDKs' httpx2
            return self.connection_error(f"{CONNECT_TIMEOUT_S:g} 秒内没有连上")
        return self._stall_error()

    def connection_error(self, reason: str) -> ProviderError:
        where = self.config.base_url or "官方地址"
        return ProviderError(
            f"无法连接模型 {self.name}（{where}）：{self._clean(reason)}。请检查网络或 base_url。",
            retryable=True,
        )

    def incomplete_error(self) -> ProviderError:
        return ProviderError(
            f"模型 {self.name} 的回答不完整：响应没有正常结束（连接中断，或返回的不是模型接口的内容），"
            "这次回答已作废。请稍后再试，或用 `wyckoff model fallback` 设置备用模型。",
            retryable=True,
        )

    def stream_error(self, detail: str) -> ProviderError:
        return ProviderError(
            f"模型 {self.name} 的流式响应中途出错：{self._clean(detail)}", retryable=True
        )

    def _clean(self, detail: str) -> str:
        detail = redact_text(str(detail or ""))
        return detail[:300]


class StreamAccumulator:
    """One reply assembled from the chunk stream; a provider switch starts it over."""

    def __init__(self) -> None:
        self.usage: TokenUsage = token_usage()
        self.restart()

    def restart(self) -> None:
        self.text = ""
        self.thinking = ""
        self.calls: list[ToolCall] = []
        self.provider_data: ProviderReplay | None = None

    def add(self, chunk: Chunk) -> None:
        if chunk["type"] == "text_delta":
            self.text += chunk["text"]
        elif chunk["type"] == "thinking_delta":
            self.thinking += chunk["text"]
        elif chunk["type"] == "tool_calls":
            self.calls.extend(chunk["calls"])
        elif chunk["type"] == "provider_data":
            self.provider_data = chunk["data"]
        elif chunk["type"] == "usage":
            self.usage = usage_of(chunk)
        elif chunk["type"] == "provider_switch":
            self.restart()

    def as_reply(self) -> Reply:
        reply: Reply = {
            "text": self.text,
            "thinking": self.thinking,
            "tool_calls": self.calls,
            "usage": self.usage,
        }
        if self.provider_data:
            reply["provider_data"] = self.provider_data
        return reply

    def assistant_message(self, provider: LLMProvider) -> AssistantMessage:
        """The assistant message for the history, with what `provider` needs back."""
        message: AssistantMessage = {"role": "assistant", "content": self.text}
        if self.calls:
            message["tool_calls"] = self.calls
        if self.thinking:
            message.update(provider.assistant_fields(self.thinking))
        if self.provider_data:
            message["provider_data"] = self.provider_data
        return message


def usage_of(chunk: UsageChunk) -> TokenUsage:
    return token_usage(
        chunk["input_tokens"],
        chunk["output_tokens"],
        chunk["cache_read_tokens"],
        chunk["cache_write_tokens"],
    )


class StreamCancelled(Exception):
    """The consumer's cancel event was set while waiting for the next chunk."""


def iter_with_timeout(
    source: Iterator[Chunk],
    timeout_s: float | None,
    on_stall: Callable[[], Exception] | None = None,
    cancel_event: threading.Event | None = None,
) -> Iterator[Chunk]:
    """Read `source` on a daemon thread; raise `on_stall()` after `timeout_s` of silence
    and StreamCancelled as soon as `cancel_event` is set.

    A half-open TCP connection would otherwise block the caller forever. When the consumer
    stops early (cancel, error), the producer stops at its next chunk.
    """
    items: queue.Queue = queue.Queue()
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in source:
                if stop.is_set():
                    break
                items.put((item, None))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            items.put((None, exc))
        finally:
            items.put((done, None))
            close = getattr(source, "close", None)
            if stop.is_set() and close is not None:
                with contextlib.suppress(Exception):
                    close()

    threading.Thread(target=produce, name="provider-stream", daemon=True).start()
    silent_since = time.monotonic()
    try:
        while True:
            try:
                item, error = items.get(timeout=POLL_S)
            except queue.Empty:
                if cancel_event is not None and cancel_event.is_set():
                    raise StreamCancelled() from None
                if timeout_s is not None and time.monotonic() - silent_since > timeout_s:
                    raise (on_stall() if on_stall else TimeoutError()) from None
                continue
            silent_since = time.monotonic()
            if error is not None:
                raise error
            if item is done:
                return
            if cancel_event is not None and cancel_event.is_set():
                raise StreamCancelled()
            yield item
    finally:
        stop.set()


MAX_ARGS_DEPTH = 32  # tools take a few levels; deeper nesting would overflow every later step


def parse_json_args(raw: str) -> dict[str, Any]:
    """Tool-call arguments as a dict; malformed or too deeply nested JSON is kept as text
    for the runtime to report."""
    import json

    if not raw or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return {"__malformed_arguments__": raw}
    return (
        value
        if isinstance(value, dict) and not too_deep(value)
        else {"__malformed_arguments__": raw}
    )


def too_deep(value: Any, limit: int = MAX_ARGS_DEPTH) -> bool:
    """Whether JSON-like `value` nests lists and objects deeper than `limit` (walked level by
    level, without recursion)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True
