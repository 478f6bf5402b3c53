"""How many tokens a model takes: the configured window, else one known for its name."""

from __future__ import annotations

import re

from wyckoff.config import ModelConfig

UNKNOWN_CONTEXT_WINDOW = 64_000

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
