"""Switch to the fallback model on retryable failures only; fail fast on configuration errors.

Neither model lets its SDK retry: a 429/5xx switches models at once instead of waiting.

After a switch the fallback stays active (and the context window follows it) until
PRIMARY_RETRY_AFTER_S has passed, then the primary is tried again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence

from wyckoff.cli.messages import Message
from wyckoff.cli.providers.base import (
    AssistantFields,
    Chunk,
    LLMProvider,
    ProviderError,
    ToolSchema,
)
from wyckoff.config import ModelConfig

PRIMARY_RETRY_AFTER_S = 300.0


class FallbackProvider(LLMProvider):
    def __init__(  # noqa: D107
        self,
        primary: LLMProvider,
        fallback: LLMProvider,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # No base __init__: every attribute below follows the active provider.
        self.primary = primary
        self.fallback = fallback
        primary.fail_fast()
        fallback.fail_fast()
        self.clock = clock  # seconds; tests pass their own to cross the retry window
        self._primary_failed_at: float | None = None

    @property
    def active(self) -> LLMProvider:
        failed_at = self._primary_failed_at
        if failed_at is not None and self.clock() - failed_at < PRIMARY_RETRY_AFTER_S:
            return self.fallback
        return self.primary

    @property
    def config(self) -> ModelConfig:
        return self.active.config

    @property
    def context_window(self) -> int:
        return self.active.context_window

    @property
    def name(self) -> str:
        return self.active.name

    @property
    def model(self) -> str:
        return self.active.model

    @property
    def provider(self) -> str:
        return self.active.provider

    def assistant_fields(self, thinking: str) -> AssistantFields:
        return self.active.assistant_fields(thinking)

    @property
    def using_fallback(self) -> bool:
        return self.active is self.fallback

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        system_prompt: str = "",
        *,
        cancel_event: threading.Event | None = None,
    ) -> Iterator[Chunk]:
        first = self.active
        try:
            yield from first.chat_stream(messages, tools, system_prompt, cancel_event=cancel_event)
            return
        except ProviderError as exc:
            if first is self.fallback or not exc.retryable:
                raise
            self._primary_failed_at = self.clock()
            reason = exc.message
        yield {
            "type": "provider_switch",
            "from": first.name,
            "to": self.fallback.name,
            "reason": reason,
        }
        try:
            yield from self.fallback.chat_stream(
                messages, tools, system_prompt, cancel_event=cancel_event
            )
        except ProviderError as exc:
            raise ProviderError(
                f"主模型 {first.name} 与备用模型 {self.fallback.name} 都失败了：{exc.message}",
                retryable=exc.retryable,
                status=exc.status,
            ) from None
