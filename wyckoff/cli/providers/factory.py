"""Which model answers: the configured one (or the default), its provider adapter, and the
fallback wrapped around it when one is set. Each SDK is imported only when its adapter is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff.cli.providers.context_windows import context_window_of
from wyckoff.config import ModelConfig, WyckoffConfig, effective_config
from wyckoff.errors import ConfigError

if TYPE_CHECKING:
    from wyckoff.cli.providers.base import LLMProvider


def resolve_model(config: WyckoffConfig, model_id: str | None = None) -> ModelConfig:
    """The model to use: the one asked for, else the default (or the first with a key)."""
    config = effective_config(config)
    if not config.models:
        raise ConfigError(
            "还没有配置模型：运行 `wyckoff model add ID --provider claude|openai|gemini --model NAME "
            "--api-key-env VAR`，或设置 ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY / "
            "DEEPSEEK_API_KEY 环境变量。"
        )
    # No default: the first model with a key; a keyless one only when the user chose it
    keyed = (m.id for m in config.models if m.api_key or m.api_key_env)
    wanted = model_id or config.default or next(keyed, None)
    if wanted is None:
        raise ConfigError(
            f"还没有默认模型（已配置：{', '.join(m.id for m in config.models)}）：运行 "
            "`wyckoff model default ID` 选一个。"
        )
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
