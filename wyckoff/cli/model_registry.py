"""Models as used: which one answers, its context window and prices, and recorded usage."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from wyckoff.config import ModelConfig, WyckoffConfig, effective_config
from wyckoff.errors import ConfigError

if TYPE_CHECKING:
    from wyckoff.cli.providers.base import LLMProvider, TokenUsage
    from wyckoff.store import Store

UNKNOWN_CONTEXT_WINDOW = 64_000
CACHE_WRITE_PRICE_FACTOR = 1.25  # Anthropic: 5-minute cache writes cost 1.25x input

# First match wins; patterns are searched in the lower-cased model name.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    (r"claude", 200_000),
    (r"gemini", 1_000_000),
    (r"gpt-4\.1", 1_000_000),
    (r"gpt-5", 400_000),
    (r"gpt-4o|gpt-4-turbo|o1|o3|o4", 128_000),
    (r"deepseek-(chat|reasoner|v3)", 128_000),
    (r"deepseek", 64_000),
    (r"qwen-long", 10_000_000),
    (r"qwen-turbo|qwen-plus-latest|qwen3-coder", 1_000_000),
    (r"qwen", 128_000),
    (r"moonshot-v1-8k", 8_000),
    (r"moonshot-v1-32k", 32_000),
    (r"kimi-k2", 256_000),
    (r"moonshot|kimi", 128_000),
)


def infer_context_window(model_name: str) -> int:
    name = model_name.lower()
    for pattern, window in CONTEXT_WINDOWS:
        if re.search(pattern, name):
            return window
    return UNKNOWN_CONTEXT_WINDOW


def context_window_of(model: ModelConfig) -> int:
    return model.context_window or infer_context_window(model.model)


def resolve_model(config: WyckoffConfig, model_id: str | None = None) -> ModelConfig:
    """The model to use: the one asked for, else the default (or the only one)."""
    config = effective_config(config)
    if not config.models:
        raise ConfigError(
            "还没有配置模型：运行 `wyckoff model add ID --provider claude|openai|gemini --model NAME "
            "--api-key-env VAR`，或设置 ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY / "
            "DEEPSEEK_API_KEY 环境变量。"
        )
    wanted = model_id or config.default or config.models[0].id
    model = config.find(wanted)
    if model is None:
        known = ", ".join(m.id for m in config.models)
        raise ConfigError(f"没有名为 '{wanted}' 的模型（已配置：{known}）。")
    return model


def build_provider(config: WyckoffConfig, model_id: str | None = None) -> LLMProvider:
    """The provider for `model_id` (default model if None), wrapped with the fallback if set."""
    config = effective_config(config)
    primary = make_provider(resolve_model(config, model_id), config.stream_timeout_s)
    fallback_id = config.fallback
    if fallback_id and fallback_id != primary.name:
        from wyckoff.cli.providers.fallback import FallbackProvider

        return FallbackProvider(
            primary, make_provider(resolve_model(config, fallback_id), config.stream_timeout_s)
        )
    return primary


def make_provider(model: ModelConfig, stream_timeout_s: float = 60.0) -> LLMProvider:
    """One provider adapter, its SDK imported only now."""
    if not model.resolved_api_key() and model.provider != "openai":
        source = f"环境变量 {model.api_key_env} 未设置" if model.api_key_env else "没有配置 API key"
        raise ConfigError(
            f"模型 {model.id} 缺少 API key（{source}）：用 `wyckoff model add {model.id} --provider "
            f"{model.provider} --model {model.model} --api-key-env VAR` 设置。"
        )
    kwargs: dict[str, Any] = {
        "context_window": context_window_of(model),
        "stream_timeout_s": stream_timeout_s,
    }
    if model.provider == "claude":
        from wyckoff.cli.providers.claude import ClaudeProvider

        return ClaudeProvider(model, **kwargs)
    if model.provider == "gemini":
        from wyckoff.cli.providers.gemini import GeminiProvider

        return GeminiProvider(model, **kwargs)
    from wyckoff.cli.providers.openai import OpenAIProvider

    return OpenAIProvider(model, **kwargs)


# --- prices and usage -----------------------------------------------------------------------


def price(model: ModelConfig, usage: TokenUsage) -> float | None:
    """Cost of one call in the currency of the configured prices; None when unpriced."""
    if model.input_per_1m is None or model.output_per_1m is None:
        return None
    cache_read_price = (
        model.cache_read_per_1m if model.cache_read_per_1m is not None else model.input_per_1m
    )
    write_factor = CACHE_WRITE_PRICE_FACTOR if model.provider == "claude" else 1.0
    total = (
        usage.get("input_tokens", 0) * model.input_per_1m
        + usage.get("output_tokens", 0) * model.output_per_1m
        + usage.get("cache_read_tokens", 0) * cache_read_price
        + usage.get("cache_write_tokens", 0) * model.input_per_1m * write_factor
    )
    return round(total / 1_000_000, 6)


def record_usage(
    store: Store, model: ModelConfig, usage: TokenUsage, session_id: str | None = None
) -> float | None:
    """Store the usage of one model call; returns its cost."""
    cost = price(model, usage)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO usage (session_id, model_id, provider, model, input_tokens, output_tokens,"
            " cache_read_tokens, cache_write_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                model.id,
                model.provider,
                model.model,
                usage.get("input_tokens", 0),
                usage.get("output_tokens", 0),
                usage.get("cache_read_tokens", 0),
                usage.get("cache_write_tokens", 0),
                cost,
            ),
        )
    return cost


def usage_summary(store: Store, days: int) -> list[dict[str, Any]]:
    """Tokens and cost per model over the last `days` days, most used first."""
    rows = store.conn.execute(
        """
        SELECT model_id, provider, model, COUNT(*) AS calls,
               SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
               SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
               SUM(cost) AS cost, COUNT(cost) AS priced_calls
        FROM usage
        WHERE ts >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?)
        GROUP BY model_id, provider, model
        ORDER BY input_tokens + output_tokens DESC
        """,
        (f"-{int(days)} days",),
    ).fetchall()
    return [dict(row) for row in rows]
